/* Calls the probe through its C ABI as an app does: reads a spec file,
 * measures, prints the result JSON on stdout. Exits 1 when the result is an
 * error or lacks a decode speed. The Rust test that compiles this checks
 * the JSON in detail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pocketbench_probe.h"

static int serious(void) { return 2; }

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: run_probe SPEC.json\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 2; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *spec = malloc((size_t)n + 1);
    if (!spec || fread(spec, 1, (size_t)n, f) != (size_t)n) { fclose(f); return 2; }
    spec[n] = '\0';
    fclose(f);

    const char *version = pocketbench_probe_version();
    if (!version || strncmp(version, "pocketbench-probe ", 18) != 0) {
        fprintf(stderr, "bad version: %s\n", version ? version : "(null)");
        return 1;
    }
    fprintf(stderr, "%s\n", version);
    /* As an app passes ProcessInfo.thermalState. */
    pocketbench_probe_set_thermal_state_callback(serious);

    char *result = pocketbench_probe_run(spec);
    free(spec);
    if (!result) { fprintf(stderr, "NULL result\n"); return 1; }
    int ok = strstr(result, "\"error\"") == NULL && strstr(result, "\"decode_tok_s\"") != NULL;
    printf("%s\n", result);
    pocketbench_probe_free(result);
    pocketbench_probe_free(NULL); /* ignored, as documented */
    return ok ? 0 : 1;
}
