#include <iostream>
#include <stdexcept>

int main() {
    std::cout << "before" << std::endl;
    throw std::runtime_error("boom");
}
