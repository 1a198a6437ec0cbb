/* A fixed-size ring of timestamped records: plain C, for clang's C front end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct record {
	uint64_t ts;
	char name[24];
};

struct ring {
	struct record *buf;
	size_t cap, head, len;
};

static int ring_init(struct ring *r, size_t cap)
{
	r->buf = calloc(cap, sizeof *r->buf);
	r->cap = cap;
	r->head = r->len = 0;
	return r->buf ? 0 : -1;
}

static void ring_put(struct ring *r, uint64_t ts, const char *name)
{
	struct record *rec = &r->buf[(r->head + r->len) % r->cap];
	rec->ts = ts;
	snprintf(rec->name, sizeof rec->name, "%s", name);
	if (r->len < r->cap)
		r->len++;
	else
		r->head = (r->head + 1) % r->cap;
}

int main(int argc, char **argv)
{
	struct ring r;
	struct timespec t;
	if (ring_init(&r, 8) != 0)
		return 1;
	for (int i = 1; i < argc; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		ring_put(&r, (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec, argv[i]);
	}
	for (size_t i = 0; i < r.len; i++) {
		const struct record *rec = &r.buf[(r.head + i) % r.cap];
		printf("%llu %s\n", (unsigned long long)rec->ts, rec->name);
	}
	free(r.buf);
	return 0;
}
