#include "greet.hpp"

std::string greet(const std::string &name) { return "Hello, " + name + "! (from another file)"; }
