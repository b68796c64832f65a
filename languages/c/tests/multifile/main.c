#include <stdio.h>
#include "greet.h"

int main(void) {
    greet("World");
    return 0;
}
