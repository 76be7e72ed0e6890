/*
 * glean.so: SPANK plugin making `--glean[=k=v,...]` a valid option of sbatch,
 * salloc and srun, so that `#SBATCH --glean` also works where glean's sbatch
 * wrapper is bypassed: the job then runs as the plain array job it also is.
 *
 * It registers the option (spank_option_register in slurm_spank_init: sbatch
 * ignores the spank_options[] table) in the contexts that parse options:
 * allocator (sbatch/salloc), local (srun), remote (slurmstepd). In sbatch,
 * salloc and srun the callback checks the form of the value (ARCHITECTURE.md,
 * "Elastic jobs"): comma-separated key=value, each key at most once, keys mode
 * (fair|scavenger|thesis), dir, batch, checkpoint (yes|no), pty (yes|no),
 * deadline, budget, profile, bounded length and charset. A bad value gets ONE
 * line "glean: --glean: ..." naming the key and what is allowed, and -1.
 * Nothing else: the wrapper and gleand act on --glean, not this plugin.
 *
 * Refusal: `optional` in plugstack.conf makes Slurm ignore failures of the
 * init/init_post_opt hooks, but NOT of an option callback: on 22.05.8 sbatch,
 * salloc and srun print "error: Invalid --glean argument: ..." and exit 255
 * (tests/spank). So a malformed --glean is refused here too; the meaning
 * (dir exists, deadline parses, thesis allowed by the admin) is checked only
 * by the wrapper, where refusal with a full message happens. Keep the key
 * list in step with the wrapper: an old plugin refuses a new key. In
 * slurmstepd the callback never fails (Slurm would only log it): an admitted
 * job must run.
 *
 * Gotcha: Slurm puts the option into the job's environment as
 * SLURM_SPANK__SLURM_SPANK_OPTION_glean_glean=<value>; sbatch or srun run
 * inside the job read it back as if --glean were given again (and a bad
 * value there fails them). glean's agent scrubs SLURM_SPANK_* from tasks;
 * a plain job that submits further jobs should unset it.
 *
 * Install (admin): `make spank`, copy spank/glean.so to the plugin directory
 * and add this line to plugstack.conf on login AND compute nodes (spank(8)):
 *     optional /usr/lib64/slurm/glean.so
 * `optional`: Slurm runs on if the file is missing.
 */
#include <stdio.h>
#include <string.h>
#include <slurm/spank.h>

SPANK_PLUGIN(glean, 1);

#define GLEAN_MAX 2048 /* longest --glean value accepted */
#define KEYS "mode, dir, batch, checkpoint, pty, deadline, budget, profile"

enum kind { ENUM, COUNT, NUMBER, TIME, PATH, NAME };

static const struct key {
	const char *name;
	enum kind kind;
	size_t max;          /* longest value, bytes */
	const char *allowed; /* for ENUM the choices, '|'-separated */
} keys[] = {
	{ "mode", ENUM, 9, "fair|scavenger|thesis" },
	{ "dir", PATH, 1024, "a path of printable ASCII without spaces, ',' or '=', up to 1024 bytes" },
	{ "batch", COUNT, 9, "a whole number from 1 to 999999999" },
	{ "checkpoint", ENUM, 3, "yes|no" },
	{ "pty", ENUM, 3, "yes|no" },
	{ "deadline", TIME, 40, "a Slurm time or ISO 8601 date (up to 40 letters, digits, ':+-.')" },
	{ "budget", NUMBER, 16, "a number of node-hours (digits, one '.', up to 16 bytes)" },
	{ "profile", NAME, 64, "a name of up to 64 letters, digits, '.', '_' or '-'" },
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static int char_ok(enum kind kind, char c)
{
	int digit = c >= '0' && c <= '9';
	int alnum = digit || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');

	switch (kind) {
	case COUNT:  return digit;
	case NUMBER: return digit || c == '.';
	case TIME:   return alnum || c == ':' || c == '+' || c == '-' || c == '.';
	case PATH:   return c > ' ' && c < 0x7f && c != ',' && c != '=';
	default:     return alnum || c == '.' || c == '_' || c == '-';
	}
}

static int value_ok(const struct key *k, const char *v, size_t n)
{
	const char *a = k->allowed, *bar;
	size_t i, dots = 0;

	if (n == 0 || n > k->max)
		return 0;
	if (k->kind == ENUM) {
		for (;; a = bar + 1) {
			bar = strchr(a, '|');
			if ((bar ? (size_t)(bar - a) : strlen(a)) == n && memcmp(a, v, n) == 0)
				return 1;
			if (bar == NULL)
				return 0;
		}
	}
	for (i = 0; i < n; i++) {
		if (!char_ok(k->kind, v[i]))
			return 0;
		dots += v[i] == '.';
	}
	if (k->kind == COUNT)
		return strspn(v, "0") < n; /* not all zeros */
	return k->kind != NUMBER || (dots <= 1 && n > dots);
}

/* show copies at most 32 bytes of s into out (size >= 36), printable only. */
static const char *show(char *out, const char *s, size_t n)
{
	size_t i, m = n > 32 ? 32 : n;

	for (i = 0; i < m; i++)
		out[i] = (s[i] > ' ' && s[i] < 0x7f && s[i] != '\'') ? s[i] : '?';
	strcpy(out + m, n > m ? "..." : "");
	return out;
}

/* check returns 0 if arg is well formed, else -1 with one line in why. */
static int check(const char *arg, char *why, size_t wn)
{
	unsigned seen = 0;
	size_t len, i;
	const char *p, *end;
	char s[40];

	if (arg == NULL)
		return 0; /* plain --glean: every key is optional */
	len = strnlen(arg, GLEAN_MAX + 1);
	if (len > GLEAN_MAX)
		return snprintf(why, wn, "value longer than %d bytes", GLEAN_MAX), -1;
	for (p = arg, end = arg + len; len > 0; p++) {
		const char *ie = memchr(p, ',', (size_t)(end - p));
		const char *eq, *v;
		const struct key *k = NULL;

		ie = ie ? ie : end;
		eq = memchr(p, '=', (size_t)(ie - p));
		if (eq == NULL)
			return snprintf(why, wn, "'%s' is not key=value; the form is --glean"
					"[=key=value,...], keys " KEYS, show(s, p, (size_t)(ie - p))), -1;
		for (i = 0; i < NKEYS; i++)
			if (strlen(keys[i].name) == (size_t)(eq - p) && !memcmp(keys[i].name, p, (size_t)(eq - p)))
				k = &keys[i];
		if (k == NULL)
			return snprintf(why, wn, "unknown key '%s'; allowed keys: " KEYS,
					show(s, p, (size_t)(eq - p))), -1;
		if (seen & (1u << (k - keys)))
			return snprintf(why, wn, "key '%s' given twice", k->name), -1;
		seen |= 1u << (k - keys);
		v = eq + 1;
		if (!value_ok(k, v, (size_t)(ie - v)))
			return snprintf(why, wn, "bad value '%s' for key '%s'; allowed: %s",
					show(s, v, (size_t)(ie - v)), k->name, k->allowed), -1;
		if (ie == end)
			break;
		p = ie;
	}
	return 0;
}

static int glean_opt(int val, const char *optarg, int remote)
{
	char why[512];

	(void)val;
	if (check(optarg, why, sizeof(why)) == 0)
		return 0;
	if (remote) { /* slurmstepd: the job was admitted; never fail it here */
		slurm_verbose("glean: --glean: %s (ignored in the job step)", why);
		return 0;
	}
	slurm_error("glean: --glean: %s", why);
	return -1;
}

static struct spank_option glean_option = {
	"glean", "[k=v,...]",
	"Run this array job elastically on idle nodes (glean). Keys: "
	"mode=fair|scavenger|thesis, dir=PATH, batch=N, checkpoint=yes|no, "
	"pty=yes|no, deadline=TIME, budget=NODE-HOURS, profile=NAME. Without "
	"glean the job runs as a plain array job.",
	2 /* optional argument */, 0, glean_opt
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	spank_err_t rc;

	(void)ac;
	(void)av;
	if (ctx != S_CTX_ALLOCATOR && ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE)
		return 0; /* slurmd, prolog/epilog: no options there */
	rc = spank_option_register(sp, &glean_option);
	if (rc != ESPANK_SUCCESS)
		slurm_error("glean: cannot register --glean: %s", spank_strerror(rc));
	return 0; /* fail soft: Slurm works on without the option */
}
