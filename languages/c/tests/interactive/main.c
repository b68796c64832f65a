#include <stdio.h>

int main(void) {
    char name[64];
    printf("Name? ");
    if (scanf("%63s", name) != 1) return 1;
    printf("Hello, %s!\n", name);
    return 0;
}
