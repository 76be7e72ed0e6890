/*
 * A stand-in for <slurm/spank.h> with only what spank/glean.c uses, so
 * that its option parser can be fuzzed from Go (check_test.go) without
 * Slurm's headers or libraries. The names and values follow Slurm 22.05's
 * header; nothing here is Slurm's code.
 */
#ifndef GLEAN_FUZZ_SPANK_H
#define GLEAN_FUZZ_SPANK_H
#include <stddef.h>

typedef struct spank_handle *spank_t;
typedef int (spank_f)(spank_t sp, int ac, char **av);
typedef int (*spank_opt_cb_f)(int val, const char *optarg, int remote);

typedef enum { ESPANK_SUCCESS = 0, ESPANK_ERROR = 1 } spank_err_t;
typedef enum {
	S_CTX_ERROR, S_CTX_LOCAL, S_CTX_REMOTE, S_CTX_ALLOCATOR, S_CTX_SLURMD, S_CTX_JOB_SCRIPT
} spank_context_t;
typedef enum { S_JOB_UID = 1, S_JOB_ID = 3 } spank_item_t;

struct spank_option {
	char *name;
	char *arginfo;
	char *usage;
	int has_arg;
	int val;
	spank_opt_cb_f cb;
};

#define SPANK_PLUGIN(name, version) \
	const char plugin_name[] = #name; \
	const char plugin_type[] = "spank"; \
	const unsigned int plugin_version = version

spank_context_t spank_context(void);
spank_err_t spank_option_register(spank_t sp, struct spank_option *opt);
spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...);
const char *spank_strerror(spank_err_t err);
void slurm_error(const char *fmt, ...);
void slurm_info(const char *fmt, ...);
void slurm_verbose(const char *fmt, ...);
#endif
