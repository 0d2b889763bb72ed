/* help.h - dlock --help's text */
#pragma once
#include <stdio.h>

/* The whole of --help, on out (stdout: the caller exits 0). */
void help_print(FILE *out);
