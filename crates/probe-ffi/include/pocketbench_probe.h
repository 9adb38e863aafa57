/*
 * pocketbench_probe.h: the pocketbench probe as a static library
 * (libpocketbench_probe_ffi.a), for an app to link and call in its own
 * process. Kept by hand; crates/probe-ffi/tests/header.rs holds it against
 * the Rust functions that implement it.
 *
 * Every string in and out is UTF-8 JSON: the spec exactly as
 * `pocketbench probe --spec FILE` reads it, the result exactly as it
 * writes it. A failure is a result too:
 *   {"schema": N, "error": {"field": "spec.shape.hidden", "message": "..."}}
 */
#ifndef POCKETBENCH_PROBE_H
#define POCKETBENCH_PROBE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Measure what spec_json asks. Blocks until done (run it off the main
 * thread). Never returns NULL; free the result with pocketbench_probe_free. */
char *pocketbench_probe_run(const char *spec_json);

/* Free a string pocketbench_probe_run returned. NULL is ignored. */
void pocketbench_probe_free(char *result);

/* "pocketbench-probe VERSION (spec and result schema N, TARGET)".
 * Static: do not free. */
const char *pocketbench_probe_version(void);

/* Ask a running pocketbench_probe_run to stop before its next token; it
 * returns an error result whose field is "cancel". Safe from any thread. */
void pocketbench_probe_cancel(void);

/* Give the probe a function returning ProcessInfo.thermalState's raw value
 * (0 nominal, 1 fair, 2 serious, 3 critical), read at the start and end of
 * every repetition. NULL removes it. */
void pocketbench_probe_set_thermal_state_callback(int (*callback)(void));

#ifdef __cplusplus
}
#endif

#endif /* POCKETBENCH_PROBE_H */
