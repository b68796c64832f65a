#include <iostream>
#include "greet.hpp"

int main() { std::cout << greet("World") << "\n"; }
