#include <stdio.h>

int main(void) {
    printf("missing semicolon\n")
    return 0;
}
