fn main() {
    println!("before");
    let v: Vec<i32> = Vec::new();
    let i = v.len();
    println!("{}", v[i]);
}
