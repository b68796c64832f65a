pub fn greet(name: &str) -> String {
    format!("Hello, {name}! (from another file)")
}
