// Command hello says hello: TestBuild's program.
package main

import "fmt"

func main() { fmt.Print("hello") }
