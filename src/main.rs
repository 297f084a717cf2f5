fn main() { println!("sfz"); }
