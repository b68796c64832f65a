#pragma once
#include <string>

std::string greet(const std::string &name);
