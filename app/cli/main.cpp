#include <iostream>
int main() { std::cout << "modescope-cli\n"; }
