/* Every bad input through the C ABI comes back as an error result, one
 * JSON object a line on stdout, and the process goes on to exit 0. */
#include <stdio.h>

#include "pocketbench_probe.h"

static void show(char *result) {
    printf("%s\n", result ? result : "NULL");
    pocketbench_probe_free(result);
}

int main(int argc, char **argv) {
    show(pocketbench_probe_run(NULL));
    show(pocketbench_probe_run("{\"schema\": 2, \"shape\": \xff\xfe}"));
    show(pocketbench_probe_run("this is not JSON"));
    /* The remaining bad specs are passed as arguments (the test writes them). */
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) { perror(argv[i]); return 2; }
        static char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        show(pocketbench_probe_run(buf));
    }
    return 0;
}
