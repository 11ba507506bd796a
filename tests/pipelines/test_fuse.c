/*
 * tests/pipelines/test_fuse.c - elementwise chains planned into one
 * program each (pipelines/fuse.h): which steps fold together, what each
 * program loads and computes, where chains are cut, and the device bytes
 * a chunk of each needs.  The programs' CUDA source is compiled with
 * NVRTC in tests/cuda/test_fuse_gen.c.
 */
#include "tests/pipelines/fuse_fixture.h"

TestSuite(fuse, .init = fx_setup, .fini = fx_teardown);

static ck_fusion *plan_fusion(const ck_plan *p)
{
    ck_fusion *fz = malloc(sizeof *fz);
    cr_assert_not_null(fz);
    ck_fuse_plan(p, fz);
    return fz;
}

/* The chain, sqrt(abs(sin(x) * 3 + x / 2)): one program that
 * loads x once and makes the last step. */
Test(fuse, a_chain_is_one_program_loading_its_input_once)
{
    ck_plan *p =
        fx_plan("[{\"name\": \"s\", \"op\": \"sin\", \"args\": [\"x\"]},"
                " {\"name\": \"m\", \"op\": \"multiply\", \"args\": "
                "[\"s\", 3]},"
                " {\"name\": \"h\", \"op\": \"divide\", \"args\": "
                "[\"x\", 2]},"
                " {\"name\": \"a\", \"op\": \"add\", \"args\": "
                "[\"m\", \"h\"]},"
                " {\"name\": \"b\", \"op\": \"abs\", \"args\": [\"a\"]},"
                " {\"name\": \"r\", \"op\": \"sqrt\", \"args\": "
                "[\"b\"]}]",
                "r");
    ck_fusion *fz = plan_fusion(p);
    const ck_fused *f = &fz->f[0];
    const ck_ew_prog *g = &f->prog;
    int loads = 0, ops = 0;

    cr_assert_eq(fz->n, 1);
    cr_assert_eq(f->root, fx_node(p, "r"));
    cr_assert_eq(fz->chain[fx_node(p, "r")], 0);
    cr_assert_eq(fz->chain[fx_node(p, "s")], -1);
    cr_assert_eq(f->nsteps, 6);
    cr_assert_eq(g->nin, 1);
    cr_assert_eq(f->in_node[0], fx_node(p, "x"));
    cr_assert_eq(g->in[0], CK_F32);
    cr_assert(g->contiguous[0]);
    cr_assert_eq(g->ndim, 2);
    for (int k = 0; k < g->n; k++) {
        loads += g->ins[k].kind == CK_EWP_LOAD;
        ops += g->ins[k].kind == CK_EWP_OP;
        for (int a = 0; a < 3; a++)
            cr_assert_lt(g->ins[k].arg[a], k > 0 ? k : 1,
                         "an instruction uses only earlier ones");
    }
    cr_assert_eq(loads, 1);
    cr_assert_eq(ops, 6);
    cr_assert_eq(g->ins[g->result].op, CK_EW_SQRT);
    cr_assert_eq(g->ins[g->result].dtype, CK_F32);
    /* x / 2 is true division: float32 stays float32 (NumPy's rules) */
    /* one chunk of 10 x 60: x in and r out, float32, two in flight */
    cr_assert_eq(ck_fuse_device_bytes(p, fz), 2 * (600 * 4 + 600 * 4));
    free(fz);
    ck_plan_free(p);
}

/* A step whose values a reduction needs is a program of its own, which
 * the chain that also uses it loads; a step two outputs share is
 * computed in both. */
Test(fuse, steps_used_outside_elementwise_code_root_their_own_program)
{
    ck_plan *p = fx_plan("[{\"name\": \"y\", \"op\": \"add\", \"args\": "
                         "[\"x\", 1]},"
                         " {\"name\": \"t\", \"op\": \"sum\", \"args\": "
                         "[\"y\"]},"
                         " {\"name\": \"z\", \"op\": \"multiply\", \"args\": "
                         "[\"y\", \"t\"]}]",
                         "z");
    ck_fusion *fz = plan_fusion(p);
    int y = fx_node(p, "y"), z = fx_node(p, "z");

    cr_assert_eq(fz->n, 2);
    cr_assert_geq(fz->chain[y], 0);
    cr_assert_geq(fz->chain[z], 0);
    const ck_fused *fzz = &fz->f[fz->chain[z]];
    cr_assert_eq(fzz->nsteps, 1);
    cr_assert_eq(fzz->prog.nin, 2);
    cr_assert_eq(fzz->in_node[0], y);
    cr_assert_eq(fzz->in_node[1], fx_node(p, "t"));
    cr_assert(fzz->prog.contiguous[0]);
    cr_assert_not(fzz->prog.contiguous[1], "a 0-d result is broadcast");
    free(fz);
    ck_plan_free(p);

    p = fx_plan("[{\"name\": \"y\", \"op\": \"exp\", \"args\": [\"x\"]},"
                " {\"name\": \"a\", \"op\": \"add\", \"args\": [\"y\", 1]},"
                " {\"name\": \"b\", \"op\": \"subtract\", \"args\": "
                "[\"y\", 1]},"
                " {\"name\": \"c\", \"op\": \"multiply\", \"args\": "
                "[\"a\", \"b\"]}]",
                "c");
    fz = plan_fusion(p);
    cr_assert_eq(fz->n, 1, "exp(x) is made once inside c's program");
    cr_assert_eq(fz->f[0].nsteps, 4);
    int exps = 0;
    for (int k = 0; k < fz->f[0].prog.n; k++)
        exps += fz->f[0].prog.ins[k].kind == CK_EWP_OP &&
                fz->f[0].prog.ins[k].op == CK_EW_EXP;
    cr_assert_eq(exps, 1);
    free(fz);
    ck_plan_free(p);
}

/* Broadcast operands are read with strides; operands and numbers are
 * converted to the compute dtype as the CPU executor converts them. */
Test(fuse, broadcasting_and_conversions_follow_the_cpu_executor)
{
    ck_plan *p =
        fx_plan("[{\"name\": \"z\", \"op\": \"multiply\", \"args\": "
                "[\"x\", \"w\"]},"
                " {\"name\": \"c\", \"op\": \"greater\", \"args\": [\"z\", 0]},"
                " {\"name\": \"r\", \"op\": \"where\", \"args\": "
                "[\"c\", \"i\", 2.5]}]",
                "r");
    ck_fusion *fz = plan_fusion(p);
    const ck_ew_prog *g = &fz->f[0].prog;
    int casts_to_f64 = 0, consts = 0;

    cr_assert_eq(fz->n, 1);
    cr_assert_eq(g->nin, 3);
    cr_assert_eq(fz->f[0].in_node[0], fx_node(p, "x"));
    cr_assert_eq(fz->f[0].in_node[1], fx_node(p, "w"));
    cr_assert_eq(fz->f[0].in_node[2], fx_node(p, "i"));
    cr_assert(g->contiguous[0]);
    cr_assert_not(g->contiguous[1], "w (60,) is broadcast over 100 rows");
    cr_assert(g->contiguous[2]);
    for (int k = 0; k < g->n; k++) {
        const ck_ewp_ins *in = &g->ins[k];
        casts_to_f64 += in->kind == CK_EWP_CAST && in->dtype == CK_F64;
        if (in->kind == CK_EWP_CONST) {
            consts++;
            cr_assert(in->dtype == CK_F64 || in->dtype == CK_I64);
        }
    }
    /* x (float32 -> float64 for x * w), the 0 of z > 0 (given as an
     * integer), i (int32 -> float64 for where); 2.5 is a float64 already */
    cr_assert_eq(casts_to_f64, 3);
    cr_assert_eq(consts, 2);
    const ck_ewp_ins *w = &g->ins[g->result];
    cr_assert_eq(w->op, CK_EW_WHERE);
    cr_assert_eq(w->compute, CK_F64);
    cr_assert_eq(g->ins[w->arg[0]].dtype, CK_BOOL);
    /* chunk 10 x 60: x f4, w (60,) f8, i i4 in; r f8 out; two in flight */
    cr_assert_eq(ck_fuse_device_bytes(p, fz),
                 2 * (600 * 4 + 60 * 8 + 600 * 4 + 600 * 8));
    free(fz);
    ck_plan_free(p);
}

/* 70 steps of "+ 1" need 141 instructions: the chain is cut into
 * programs that each fit, every step in exactly one of them, the last
 * step's program making the output. */
Test(fuse, a_chain_too_long_for_one_program_is_cut)
{
    char *steps = malloc(70 * 96 + 16), *s = steps;
    cr_assert_not_null(steps);
    s += sprintf(s, "[");
    for (int k = 0; k < 70; k++)
        s += sprintf(s,
                     "%s{\"name\": \"s%d\", \"op\": \"add\", \"args\": "
                     "[\"%s%d\", 1]}",
                     k ? ", " : "", k, k ? "s" : "x", k ? k - 1 : 0);
    sprintf(s, "]");
    /* s0 reads "x0": make it read x */
    char *x0 = strstr(steps, "\"x0\"");
    memcpy(x0, "\"x\" ", 4);
    ck_plan *p = fx_plan(steps, "s69");
    ck_fusion *fz = plan_fusion(p);
    int total = 0;

    cr_assert_gt(fz->n, 1);
    for (int k = 0; k < fz->n; k++) {
        cr_assert_leq(fz->f[k].prog.n, CK_EWP_MAX_INS);
        total += fz->f[k].nsteps;
    }
    cr_assert_eq(total, 70);
    cr_assert_geq(fz->chain[fx_node(p, "s69")], 0);
    free(fz);
    free(steps);
    ck_plan_free(p);
}

/* No elementwise step: no program, no device bytes. */
Test(fuse, a_pipeline_without_elementwise_steps_has_no_program)
{
    ck_plan *p = fx_plan("[{\"name\": \"t\", \"op\": \"transpose\", "
                         "\"args\": [\"x\"]}]",
                         "t");
    ck_fusion *fz = plan_fusion(p);

    cr_assert_eq(fz->n, 0);
    cr_assert_eq(ck_fuse_device_bytes(p, fz), 0);
    free(fz);
    ck_plan_free(p);
}
