//go:build cgo

// Package spankfuzz fuzzes spank/glean.c's parser of --glean values,
// check(), which runs inside sbatch, salloc and srun on every submission
// that names --glean: the value is the user's. The plugin's C file is
// compiled here against a stand-in header (include/slurm/spank.h) with
// stubs for the Slurm calls it makes.
package spankfuzz

/*
#cgo CFLAGS: -I${SRCDIR}/include -Wall -Wextra -Wno-unused-parameter -Wno-unused-function
#include <stdarg.h>
#include <stdlib.h>
#include "../glean.c"

spank_context_t spank_context(void) { return S_CTX_ALLOCATOR; }
spank_err_t spank_option_register(spank_t sp, struct spank_option *opt) { return ESPANK_SUCCESS; }
spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...) { return ESPANK_ERROR; }
const char *spank_strerror(spank_err_t err) { return "stub"; }
void slurm_error(const char *fmt, ...) {}
void slurm_info(const char *fmt, ...) {}
void slurm_verbose(const char *fmt, ...) {}

// fuzz_check runs check() (static in glean.c).
static int fuzz_check(const char *arg, char *why, size_t wn) { return check(arg, why, wn); }
*/
import "C"

import "unsafe"

// CheckValue runs the plugin's check() and returns whether it accepts v
// and its one-line reason.
func CheckValue(v string) (bool, string) {
	arg := C.CString(v)
	defer C.free(unsafe.Pointer(arg))
	why := (*C.char)(C.calloc(512, 1))
	defer C.free(unsafe.Pointer(why))
	ok := C.fuzz_check(arg, why, 512) == 0
	return ok, C.GoString(why)
}
