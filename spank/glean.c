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
 * The epilog marker (issue 6): on a compute node, when one of glean's pilot
 * jobs ends (its partition is the plugin's partition= argument), the job
 * epilog hook drops a marker named by the job id, and nothing else, into
 * <spool>/ended/, so that gleand takes the pilot's tasks back at once
 * instead of after the heartbeat timeout (a SIGKILLed agent, an OOM kill).
 * It reads nothing a user wrote: the job id comes from Slurm
 * (spank_get_item), the partition from the epilog's environment (Slurm's).
 * It writes as the glean user (user=), in a forked child that dropped
 * root for good, with openat(O_NOFOLLOW | O_EXCL) in <spool>/ended, which
 * must be a directory of that user's that nobody else may write into, in a
 * spool directory of that user's. gleand acts on a marker only if it is
 * its own user's and names a pilot its records list (sidecar/spool
 * EndedPilots). Anything wrong is logged and ignored: the epilog never
 * fails (a failing epilog would drain the node if the plugin were
 * `required`), and the heartbeat timeout still covers the pilot.
 *
 * Install (admin): `make spank`, copy spank/glean.so to the plugin directory
 * and add this line to plugstack.conf on login AND compute nodes (spank(8)):
 *     optional /usr/lib64/slurm/glean.so spool=/var/spool/glean user=glean partition=pilot
 * `optional`: Slurm runs on if the file is missing. Without spool= there is
 * no marker (the option alone still works). The arguments are glean.toml's
 * spool.dir, daemon.user and partitions.pilot.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
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

/* ---- the epilog marker ---- */

#define ENDED_DIR "ended" /* sidecar/spool.EndedDir */

struct marker_conf {
	const char *spool, *user, *partition;
};

/* marker_args reads spool=, user= and partition= (defaults glean, pilot);
 * unknown arguments are logged and ignored. It returns 0 without spool=. */
static int marker_args(int ac, char **av, struct marker_conf *c)
{
	int i;

	c->spool = NULL;
	c->user = "glean";
	c->partition = "pilot";
	for (i = 0; i < ac; i++) {
		if (strncmp(av[i], "spool=", 6) == 0 && av[i][6] == '/')
			c->spool = av[i] + 6;
		else if (strncmp(av[i], "user=", 5) == 0 && av[i][5] != '\0')
			c->user = av[i] + 5;
		else if (strncmp(av[i], "partition=", 10) == 0 && av[i][10] != '\0')
			c->partition = av[i] + 10;
		else
			slurm_info("glean: plugstack.conf: unknown argument '%s' ignored "
				   "(spool=/ABSOLUTE/DIR user=NAME partition=NAME)", av[i]);
	}
	return c->spool != NULL;
}

/* Exit codes of the marker's child, for the parent's log line. */
enum { M_OK, M_PRIV, M_SPOOL, M_DIR, M_CREATE, M_WRITE };

static const char *marker_why[] = {
	"", "cannot drop root to the glean user", "the spool is not a directory of the glean user's",
	"<spool>/" ENDED_DIR " is not a directory of the glean user's that only it may write into",
	"cannot create the marker", "cannot write the marker",
};

/* owned_dir reports whether fd is a directory of uid nobody else may write. */
static int owned_dir(int fd, uid_t uid)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
	       (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* write_marker runs as the glean user: <spool>/ended/<id>, created O_EXCL
 * and O_NOFOLLOW relative to the checked directory's descriptor. */
static int write_marker(const char *spool, uint32_t id, uid_t uid)
{
	char name[16];
	int sfd, dfd, fd, n, ok;

	sfd = open(spool, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* the admin's path: may be a link */
	if (sfd < 0 || !owned_dir(sfd, uid))
		return M_SPOOL;
	dfd = openat(sfd, ENDED_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(sfd);
	if (dfd < 0 || !owned_dir(dfd, uid))
		return M_DIR;
	n = snprintf(name, sizeof(name), "%u", id);
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	close(dfd);
	if (fd < 0)
		return errno == EEXIST ? M_OK : M_CREATE;
	name[n] = '\n';
	ok = write(fd, name, (size_t)n + 1) == n + 1;
	return close(fd) == 0 && ok ? M_OK : M_WRITE;
}

/* drop_marker forks a child that becomes the glean user for good and
 * writes the marker; the epilog (root) only waits for it. */
static void drop_marker(const struct marker_conf *c, uint32_t id)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	pid_t pid;
	int st = 0;

	if (getpwnam_r(c->user, &pw, buf, sizeof(buf), &res) != 0 || res == NULL || pw.pw_uid == 0) {
		slurm_error("glean: epilog marker: no user '%s' (or it is root): pilot %u's tasks "
			    "wait for the heartbeat timeout", c->user, id);
		return;
	}
	pid = fork();
	if (pid < 0) {
		slurm_error("glean: epilog marker: fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setgid(pw.pw_gid) != 0 || setuid(pw.pw_uid) != 0 ||
		    setuid(0) == 0 || getuid() != pw.pw_uid)
			_exit(M_PRIV);
		_exit(write_marker(c->spool, id, pw.pw_uid));
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != M_OK) {
		int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		slurm_error("glean: epilog marker for pilot %u in %s/" ENDED_DIR ": %s", id, c->spool,
			    code > M_OK && code <= M_WRITE ? marker_why[code] : "the writer died");
	}
}

/* slurm_spank_job_epilog: on the node, when a job of the pilot partition
 * ended, drop its marker. Fail soft: always 0. */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	struct marker_conf c;
	const char *part;
	uint32_t id = 0;

	if (spank_context() != S_CTX_JOB_SCRIPT || !marker_args(ac, av, &c))
		return 0;
	part = getenv("SLURM_JOB_PARTITION"); /* the epilog's environment: Slurm's own */
	if (part == NULL || strcmp(part, c.partition) != 0)
		return 0; /* not a pilot */
	if (spank_get_item(sp, S_JOB_ID, &id) != ESPANK_SUCCESS || id == 0) {
		slurm_error("glean: epilog marker: no job id");
		return 0;
	}
	drop_marker(&c, id);
	return 0;
}
