use std::io::Write;

fn main() {
    print!("Name? ");
    std::io::stdout().flush().unwrap();
    let mut name = String::new();
    std::io::stdin().read_line(&mut name).unwrap();
    println!("Hello, {}!", name.trim());
}
