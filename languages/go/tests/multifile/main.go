package main

import "fmt"

func main() {
	fmt.Println(greet("World"))
}
