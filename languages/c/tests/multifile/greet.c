#include <stdio.h>
#include "greet.h"

void greet(const char *name) { printf("Hello, %s! (from another file)\n", name); }
