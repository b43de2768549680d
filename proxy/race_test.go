//go:build race

package proxy_test

// raceEnabled: the race detector makes every byte copied in Go code an
// order of magnitude slower, so the largest streams are smaller under it.
const raceEnabled = true
