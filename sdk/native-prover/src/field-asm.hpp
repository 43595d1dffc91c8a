// Field arithmetic for loops that are bound by throughput, not latency (Poseidon2's lanes, poseidon2.hpp), in
// inline assembly on memory operands: each operation reads its operands and writes its result with 64-bit moves.
// Compiled from C++, the same chains cost about twice as much there: gcc moves 32-byte values through vector
// registers (a load that cannot be forwarded from the four 64-bit stores before it stalls), and selects results with
// branches or vector masks. The result may be an operand (r == a or r == b): every operand is read before r is
// written. Included inside the kernel namespace after field.hpp: the BMI2/ADX build multiplies with mulx on two
// carry chains (adcx, adox); the portable one multiplies with montMul (field.hpp).

// The conditional subtraction that takes t0..t3 below 2p to below p, through four scratch registers, and the store.
#define FIELD_ASM_REDUCE_STORE(s0, s1, s2, s3) \
  "movq %[t0], %[" s0 "]\n\t"                  \
  "subq %[p0], %[" s0 "]\n\t"                  \
  "movq %[t1], %[" s1 "]\n\t"                  \
  "sbbq %[p1], %[" s1 "]\n\t"                  \
  "movq %[t2], %[" s2 "]\n\t"                  \
  "sbbq %[p2], %[" s2 "]\n\t"                  \
  "movq %[t3], %[" s3 "]\n\t"                  \
  "sbbq %[p3], %[" s3 "]\n\t"                  \
  "cmovcq %[t0], %[" s0 "]\n\t"                \
  "cmovcq %[t1], %[" s1 "]\n\t"                \
  "cmovcq %[t2], %[" s2 "]\n\t"                \
  "cmovcq %[t3], %[" s3 "]\n\t"                \
  "movq %[" s0 "], (%[r])\n\t"                 \
  "movq %[" s1 "], 8(%[r])\n\t"                \
  "movq %[" s2 "], 16(%[r])\n\t"               \
  "movq %[" s3 "], 24(%[r])\n\t"

#define FIELD_ASM_MODULUS(m) [p0] "m"(m.p[0]), [p1] "m"(m.p[1]), [p2] "m"(m.p[2]), [p3] "m"(m.p[3])
#define FIELD_ASM_READS(x) "m"(*(const u64(*)[4])x)

/** r = a + b mod p, for a, b < p. */
static FIELD_INLINE void addModAsm(u64 r[4], const u64 a[4], const u64 b[4], const Modulus& m) {
  u64 t0, t1, t2, t3, s0, s1, s2, s3;
  asm("movq (%[a]), %[t0]\n\t"
      "movq 8(%[a]), %[t1]\n\t"
      "movq 16(%[a]), %[t2]\n\t"
      "movq 24(%[a]), %[t3]\n\t"
      "addq (%[b]), %[t0]\n\t"
      "adcq 8(%[b]), %[t1]\n\t"
      "adcq 16(%[b]), %[t2]\n\t"
      "adcq 24(%[b]), %[t3]\n\t"
      FIELD_ASM_REDUCE_STORE("s0", "s1", "s2", "s3")
      : [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [s0] "=&r"(s0), [s1] "=&r"(s1), [s2] "=&r"(s2), [s3] "=&r"(s3),
        "=m"(*(u64(*)[4])r)
      : [a] "r"(a), [b] "r"(b), [r] "r"(r), FIELD_ASM_MODULUS(m), FIELD_ASM_READS(a), FIELD_ASM_READS(b)
      : "cc");
}

#if defined(__BMI2__) && defined(__ADX__)

// CIOS Montgomery multiplication in the registers t0..t3 and top (the fifth word), as montMul in field.hpp: p's top
// word is below 2^63 - 1, so t stays within five words. A row adds a * b[i] (rdx = b[i]) on two carry chains.
#define FIELD_ASM_FIRST_ROW             \
  "xorl %k[top], %k[top]\n\t"           \
  "mulxq (%[a]), %[t0], %[t1]\n\t"      \
  "mulxq 8(%[a]), %[lo], %[t2]\n\t"     \
  "adoxq %[lo], %[t1]\n\t"              \
  "mulxq 16(%[a]), %[lo], %[t3]\n\t"    \
  "adoxq %[lo], %[t2]\n\t"              \
  "mulxq 24(%[a]), %[lo], %[top]\n\t"   \
  "adoxq %[lo], %[t3]\n\t"              \
  "movl $0, %k[lo]\n\t"                 \
  "adoxq %[lo], %[top]\n\t"
#define FIELD_ASM_ROW                   \
  "xorl %k[top], %k[top]\n\t"           \
  "mulxq (%[a]), %[lo], %[hi]\n\t"      \
  "adoxq %[lo], %[t0]\n\t"              \
  "adcxq %[hi], %[t1]\n\t"              \
  "mulxq 8(%[a]), %[lo], %[hi]\n\t"     \
  "adoxq %[lo], %[t1]\n\t"              \
  "adcxq %[hi], %[t2]\n\t"              \
  "mulxq 16(%[a]), %[lo], %[hi]\n\t"    \
  "adoxq %[lo], %[t2]\n\t"              \
  "adcxq %[hi], %[t3]\n\t"              \
  "mulxq 24(%[a]), %[lo], %[hi]\n\t"    \
  "adoxq %[lo], %[t3]\n\t"              \
  "adcxq %[hi], %[top]\n\t"             \
  "movl $0, %k[lo]\n\t"                 \
  "adoxq %[lo], %[top]\n\t"
// t = (t + q * p) / 2^64 with q = t0 * -p^-1 mod 2^64, which clears t0: one word of the reduction (`top`: the
// register holding t's fifth word).
#define FIELD_ASM_REDUCE_WORD(top)      \
  "movq %[t0], %%rdx\n\t"               \
  "imulq %[inv], %%rdx\n\t"             \
  "xorl %k[lo], %k[lo]\n\t"             \
  "mulxq %[p0], %[lo], %[hi]\n\t"       \
  "adcxq %[t0], %[lo]\n\t"              \
  "movq %[hi], %[t0]\n\t"               \
  "adcxq %[t1], %[t0]\n\t"              \
  "mulxq %[p1], %[lo], %[t1]\n\t"       \
  "adoxq %[lo], %[t0]\n\t"              \
  "adcxq %[t2], %[t1]\n\t"              \
  "mulxq %[p2], %[lo], %[t2]\n\t"       \
  "adoxq %[lo], %[t1]\n\t"              \
  "adcxq %[t3], %[t2]\n\t"              \
  "mulxq %[p3], %[lo], %[t3]\n\t"       \
  "adoxq %[lo], %[t2]\n\t"              \
  "movl $0, %k[lo]\n\t"                 \
  "adcxq %[lo], %[t3]\n\t"              \
  "adoxq %[" top "], %[t3]\n\t"

/** r = a * b / 2^256 mod p, as montMul. */
static FIELD_INLINE void montMulAsm(u64 r[4], const u64 a[4], const u64 b[4], const Modulus& m) {
  u64 t0, t1, t2, t3, top, lo, hi, rdx;
  const u64* bWords = b;  // a scratch register once the last row is in
  asm("movq (%[b]), %%rdx\n\t" FIELD_ASM_FIRST_ROW FIELD_ASM_REDUCE_WORD("top")
      "movq 8(%[b]), %%rdx\n\t" FIELD_ASM_ROW FIELD_ASM_REDUCE_WORD("top")
      "movq 16(%[b]), %%rdx\n\t" FIELD_ASM_ROW FIELD_ASM_REDUCE_WORD("top")
      "movq 24(%[b]), %%rdx\n\t" FIELD_ASM_ROW FIELD_ASM_REDUCE_WORD("top")
      FIELD_ASM_REDUCE_STORE("top", "lo", "hi", "b")
      : [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [top] "=&r"(top), [lo] "=&r"(lo), [hi] "=&r"(hi), "=&d"(rdx),
        [b] "+&r"(bWords), "=m"(*(u64(*)[4])r)
      : [a] "r"(a), [r] "r"(r), FIELD_ASM_MODULUS(m), [inv] "m"(m.inv), FIELD_ASM_READS(a), FIELD_ASM_READS(b)
      : "cc");
}

/**
 * r = a^2 / 2^256 mod p: the eight-word square (six cross products, doubled, and four squares: 10 multiplications
 * against 16), then the low half reduced word by word and the high half added (below 1.2p + p, so one conditional
 * subtraction still makes it canonical).
 */
static FIELD_INLINE void montSqrAsm(u64 r[4], const u64 a[4], const Modulus& m) {
  u64 t0, t1, t2, t3, h0, h1, h2, h3, lo, hi, rdx;
  const u64* aWords = a;  // the zero fifth word of the reduction once the square is in
  asm("movq (%[a]), %%rdx\n\t"
      "xorl %k[h1], %k[h1]\n\t"
      "mulxq 8(%[a]), %[t1], %[t2]\n\t"  // a0 a1, a0 a2, a0 a3 at words 1 to 4
      "mulxq 16(%[a]), %[lo], %[t3]\n\t"
      "adcxq %[lo], %[t2]\n\t"
      "mulxq 24(%[a]), %[lo], %[h0]\n\t"
      "adcxq %[lo], %[t3]\n\t"
      "adcxq %[h1], %[h0]\n\t"
      "movq 8(%[a]), %%rdx\n\t"  // a1 a2, a1 a3 at words 3 to 5
      "mulxq 16(%[a]), %[lo], %[hi]\n\t"
      "adoxq %[lo], %[t3]\n\t"
      "adcxq %[hi], %[h0]\n\t"
      "mulxq 24(%[a]), %[lo], %[h1]\n\t"
      "adoxq %[lo], %[h0]\n\t"
      "movl $0, %k[h2]\n\t"
      "adcxq %[h2], %[h1]\n\t"
      "adoxq %[h2], %[h1]\n\t"
      "movq 16(%[a]), %%rdx\n\t"  // a2 a3 at words 5 and 6
      "mulxq 24(%[a]), %[lo], %[h2]\n\t"
      "addq %[lo], %[h1]\n\t"
      "adcq $0, %[h2]\n\t"
      "xorl %k[h3], %k[h3]\n\t"  // the cross products twice
      "addq %[t1], %[t1]\n\t"
      "adcq %[t2], %[t2]\n\t"
      "adcq %[t3], %[t3]\n\t"
      "adcq %[h0], %[h0]\n\t"
      "adcq %[h1], %[h1]\n\t"
      "adcq %[h2], %[h2]\n\t"
      "adcq %[h3], %[h3]\n\t"
      "movq (%[a]), %%rdx\n\t"  // plus the squares
      "mulxq %%rdx, %[t0], %[hi]\n\t"
      "addq %[hi], %[t1]\n\t"
      "movq 8(%[a]), %%rdx\n\t"
      "mulxq %%rdx, %[lo], %[hi]\n\t"
      "adcq %[lo], %[t2]\n\t"
      "adcq %[hi], %[t3]\n\t"
      "movq 16(%[a]), %%rdx\n\t"
      "mulxq %%rdx, %[lo], %[hi]\n\t"
      "adcq %[lo], %[h0]\n\t"
      "adcq %[hi], %[h1]\n\t"
      "movq 24(%[a]), %%rdx\n\t"
      "mulxq %%rdx, %[lo], %[hi]\n\t"
      "adcq %[lo], %[h2]\n\t"
      "adcq %[hi], %[h3]\n\t"
      "movl $0, %k[a]\n\t"
      FIELD_ASM_REDUCE_WORD("a") FIELD_ASM_REDUCE_WORD("a") FIELD_ASM_REDUCE_WORD("a") FIELD_ASM_REDUCE_WORD("a")
      "addq %[h0], %[t0]\n\t"
      "adcq %[h1], %[t1]\n\t"
      "adcq %[h2], %[t2]\n\t"
      "adcq %[h3], %[t3]\n\t"
      FIELD_ASM_REDUCE_STORE("h0", "h1", "h2", "h3")
      : [t0] "=&r"(t0), [t1] "=&r"(t1), [t2] "=&r"(t2), [t3] "=&r"(t3), [h0] "=&r"(h0), [h1] "=&r"(h1), [h2] "=&r"(h2), [h3] "=&r"(h3),
        [lo] "=&r"(lo), [hi] "=&r"(hi), "=&d"(rdx), [a] "+&r"(aWords), "=m"(*(u64(*)[4])r)
      : [r] "r"(r), FIELD_ASM_MODULUS(m), [inv] "m"(m.inv), FIELD_ASM_READS(a)
      : "cc");
}

#else

static FIELD_INLINE void montMulAsm(u64 r[4], const u64 a[4], const u64 b[4], const Modulus& m) { montMul(r, a, b, m); }
static FIELD_INLINE void montSqrAsm(u64 r[4], const u64 a[4], const Modulus& m) { montMul(r, a, a, m); }

#endif
