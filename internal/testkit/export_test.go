package testkit

// RaceDetector is raceDetector, for the tests.
const RaceDetector = raceDetector
