mod greet;

fn main() {
    println!("{}", greet::greet("World"));
}
