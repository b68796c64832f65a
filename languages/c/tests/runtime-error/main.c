#include <stdio.h>

int main(void) {
    volatile int zero = 0;
    printf("before\n");
    fflush(stdout);
    printf("%d\n", 42 / zero);
    return 0;
}
