package main

func greet(name string) string {
	return "Hello, " + name + "! (from another file)"
}
