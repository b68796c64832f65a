greet() { echo "Hello, $1! (from another file)"; }
