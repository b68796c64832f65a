package main

import "fmt"

func main() {
	fmt.Println("before")
	xs := []int{}
	i := len(xs)
	fmt.Println(xs[i])
}
