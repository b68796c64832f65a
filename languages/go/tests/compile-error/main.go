package main

func main() {
	undefinedThing()
}
