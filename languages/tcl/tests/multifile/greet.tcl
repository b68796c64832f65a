proc greet {name} { return "Hello, $name! (from another file)" }
