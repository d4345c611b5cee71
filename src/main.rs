fn main() {
    std::process::exit(picket::cli::main());
}
