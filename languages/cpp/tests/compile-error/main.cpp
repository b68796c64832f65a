#include <string>

int main() {
    std::string s = 42.0;
    return s.size();
}
