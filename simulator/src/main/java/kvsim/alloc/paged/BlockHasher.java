package kvsim.alloc.paged;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

/**
 * Chained block hashes, as vLLM v1's {@code hash_block_tokens} ({@code
 * vllm/v1/core/kv_cache_utils.py} at commit ec5ef0a) computes them:
 * the hash of block i covers the hash of block i−1, the token
 * ids of block i and the extra keys, so equal hashes mean equal prefixes.
 *
 * <ul>
 *   <li>The parent of block 0 is {@link #NONE_HI}/{@link #NONE_LO}, a fixed value, so hashes are
 *       reproducible across runs (vLLM's {@code NONE_HASH} with {@code PYTHONHASHSEED} set).
 *   <li>Extra keys, in vLLM's order: the LoRA adapter name on every block, the cache salt on the
 *       first block only. Multimodal and prompt-embeds keys are not modelled.
 *   <li>Caller-supplied hash ids (traces that carry them, such as Mooncake's {@code hash_ids}) are
 *       used as the block hash directly, see {@link #HASH_ID_LO}.
 * </ul>
 *
 * <h2>Note [Block hash]</h2>
 *
 * <p>The hash is SHA-256 over a canonical byte encoding, truncated to its first 128 bits (vLLM's
 * default is SHA-256 of a pickled tuple, 256 bits; 128 bits keep the index at two longs per key
 * and a collision among 2^40 blocks has probability below 2^-48). The encoding, all integers
 * big-endian:
 *
 * <pre>
 *   parent hash      16 bytes (high 64 bits, then low 64 bits)
 *   token count       4 bytes
 *   token ids         4 bytes each
 *   LoRA name        'L', 4-byte length, UTF-8 bytes     (only when a LoRA name is set)
 *   cache salt       'S', 4-byte length, UTF-8 bytes     (only on block 0, only when set)
 * </pre>
 *
 * <p>The 128-bit value is read as two longs, big-endian: the first 8 digest bytes are the high
 * half. Java's {@code hashCode} is never used as a block hash. A caller-supplied id {@code x}
 * becomes the block hash ({@code x}, {@link #HASH_ID_LO}), so printed hash prefixes show the id in
 * hex; {@link #HASH_ID_LO} is a fixed tag, so an id collides with a computed hash only if 64 of its
 * bits equal the tag (probability 2^-64). Blocks past the supplied ids chain from the last supplied
 * value as above.
 *
 * <p>{@link Algorithm#MURMUR3} hashes the same encoding with MurmurHash3 x64 128 (seed 0; its h1 is
 * the high half) instead of SHA-256; vLLM, too, offers a non-cryptographic block hash ({@code
 * xxhash}) beside SHA-256. The function never changes a run: only whether two hashes are equal
 * matters (which prefixes are cached and found), and both tell equal encodings from unequal ones
 * but for collisions of 128-bit values (MurmurHash3 resists no deliberately crafted collision,
 * which traces of token ids are not). It changes the cost: SHA-256 took a quarter of a serving
 * run of 200,000 requests. Serving runs, which print no hash, use MurmurHash3; {@code kvsim
 * blocks}, which prints hash prefixes, keeps SHA-256.
 */
public final class BlockHasher {
  /** High half of the parent hash of block 0. */
  public static final long NONE_HI;
  /** Low half of the parent hash of block 0. */
  public static final long NONE_LO;
  /** Low half of every hash built from a caller-supplied id (the id is the high half): ASCII {@code "kvsim-id"}. */
  public static final long HASH_ID_LO = 0x6b7673696d2d6964L;

  static {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest("kvsim NONE_HASH".getBytes(StandardCharsets.US_ASCII));
      NONE_HI = readLong(d, 0);
      NONE_LO = readLong(d, 8);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  /** The function over the canonical encoding (Note [Block hash]). */
  public enum Algorithm {
    /** SHA-256, truncated to 128 bits: vLLM's default function. */
    SHA256,
    /** MurmurHash3 x64 128, seed 0: non-cryptographic; 29 ns a block of 16 tokens against SHA-256's 115 ns. */
    MURMUR3
  }

  private static final VarHandle LITTLE_ENDIAN_LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle BIG_ENDIAN_LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
  private static final VarHandle BIG_ENDIAN_INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);

  private final Algorithm algorithm;
  /** SHA-256 of blocks without extra keys over words, in Java (Note [SHA-256 over words]). */
  private final boolean sha256InJava;
  private final MessageDigest sha;
  private final byte[] digest = new byte[32];
  private byte[] buf = new byte[256];

  /** Builds a SHA-256 hasher; not thread-safe (one per manager). */
  public BlockHasher() {
    this(Algorithm.SHA256);
  }

  /** Builds a hasher of {@code algorithm}; not thread-safe (one per manager). */
  public BlockHasher(Algorithm algorithm) {
    this(algorithm, algorithm == Algorithm.SHA256 && !Intrinsic.SHA256);
  }

  /**
   * Builds a hasher of {@code algorithm} that computes SHA-256 of blocks without extra keys in Java
   * when {@code sha256InJava} (Note [SHA-256 over words]; tests set it on every JVM).
   */
  BlockHasher(Algorithm algorithm, boolean sha256InJava) {
    this.sha256InJava = algorithm == Algorithm.SHA256 && sha256InJava;
    this.algorithm = algorithm;
    try {
      sha = algorithm == Algorithm.SHA256 ? MessageDigest.getInstance("SHA-256") : null;
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }

  /**
   * Hashes tokens {@code [from, from + count)} of {@code tokens} under the parent hash and extra
   * keys ({@code lora} on every block, {@code salt} only when the caller passes it, i.e. for block
   * 0; either may be null), and stores the 128-bit result in {@code out[outAt]} (high) and {@code
   * out[outAt + 1]} (low).
   */
  public void hashBlock(
      long parentHi, long parentLo, int[] tokens, int from, int count, byte[] lora, byte[] salt, long[] out, int outAt) {
    if (lora == null && salt == null) {
      if (algorithm == Algorithm.MURMUR3) {
        murmur3Words(parentHi, parentLo, tokens, from, count, out, outAt);
        return;
      }
      if (sha256InJava) {
        sha256Words(parentHi, parentLo, tokens, from, count, out, outAt);
        return;
      }
    }
    int size = 16 + 4 + 4 * count + (lora == null ? 0 : 5 + lora.length) + (salt == null ? 0 : 5 + salt.length);
    if (size > buf.length) {
      buf = new byte[Math.max(size, buf.length * 2)];
    }
    int p = writeLong(buf, 0, parentHi);
    p = writeLong(buf, p, parentLo);
    p = writeInt(buf, p, count);
    for (int i = 0; i < count; i++) {
      p = writeInt(buf, p, tokens[from + i]);
    }
    if (lora != null) {
      buf[p++] = 'L';
      p = writeInt(buf, p, lora.length);
      System.arraycopy(lora, 0, buf, p, lora.length);
      p += lora.length;
    }
    if (salt != null) {
      buf[p++] = 'S';
      p = writeInt(buf, p, salt.length);
      System.arraycopy(salt, 0, buf, p, salt.length);
      p += salt.length;
    }
    if (algorithm == Algorithm.MURMUR3) {
      murmur3(buf, p, out, outAt);
      return;
    }
    sha.update(buf, 0, p);
    try {
      sha.digest(digest, 0, 32);
    } catch (DigestException e) {
      throw new IllegalStateException(e);
    }
    out[outAt] = readLong(digest, 0);
    out[outAt + 1] = readLong(digest, 8);
  }

  /**
   * Whether this JVM computes MessageDigest's SHA-256 with the processor's SHA instructions: its
   * second JIT tier is on and {@code UseSHA256Intrinsics} is set (Note [SHA-256 over words]).
   */
  private static final class Intrinsic {
    static final boolean SHA256 = sha256();

    private static boolean sha256() {
      try {
        com.sun.management.HotSpotDiagnosticMXBean vm =
            java.lang.management.ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
        boolean secondTier = "false".equals(vm.getVMOption("TieredCompilation").getValue())
            || Integer.parseInt(vm.getVMOption("TieredStopAtLevel").getValue()) >= 4;
        return secondTier && "true".equals(vm.getVMOption("UseSHA256Intrinsics").getValue());
      } catch (RuntimeException | LinkageError e) {
        return false; // a JVM without these options or without jdk.management: SHA-256 in Java here
      }
    }
  }

  // Note [SHA-256 over words]: without extra keys, the canonical encoding (Note [Block hash]) is
  // whole 32-bit big-endian words: the parent's four, the count, the tokens. SHA-256 (FIPS 180-4)
  // reads its message as exactly such words, so the words go into its message schedule as they
  // are, padded as FIPS 180-4 section 5.1.1 pads a message of 32 * n bits (one word 0x80000000,
  // zero words, the length in bits in the last two words of the last 16-word block): the same
  // bytes, so the same digest as MessageDigest's (BlockHasherTest compares them on random
  // blocks), without writing the tokens into bytes that the digest reads back into words, nor
  // MessageDigest's buffering. A block script runs on the JIT's first tier (Note [Flags per
  // command] in the launcher), which has no intrinsic for the JDK's SHA-256, so this was a sixth
  // of a 27,200-operation script's run, and is now less than half of that (JMH BlockHashBenchmark
  // on the first tier: 1,842 to 1,400 ns a block). With the second tier on and the processor's SHA
  // instructions, MessageDigest's intrinsic is four times faster than this (203 against 864 ns),
  // so it is used then (Intrinsic). Extra keys are bytes, not words; a block with one goes through
  // MessageDigest.
  private static final int[] SHA256_K = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
  };
  private static final int[] SHA256_IV = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
  };

  /** The padded message, in words (Note [SHA-256 over words]). */
  private int[] words = new int[32];
  private final int[] schedule = new int[64];
  private final int[] state = new int[8];

  // Note [Hashes of shared prefixes]: requests that share a prompt prefix hash the same blocks
  // under the same parents again (half the benchmark script's requests share 31 blocks). The last
  // hash computed under each parent is kept in a table of 4,096 slots chosen by the parent's bits,
  // with its whole input (parent, count, tokens), and used again only when the input is equal to
  // it; so a kept hash is returned only for the input it is the SHA-256 of.
  private static final int MEMO_SLOTS = 4096;
  private long[] memoParent;
  private long[] memoHash;
  private int[][] memoTokens;

  private void sha256Words(long parentHi, long parentLo, int[] tokens, int from, int count, long[] out, int outAt) {
    if (memoParent == null) {
      memoParent = new long[2 * MEMO_SLOTS];
      memoHash = new long[2 * MEMO_SLOTS];
      memoTokens = new int[MEMO_SLOTS][];
    }
    long mix = (parentHi ^ parentLo) * 0x9E3779B97F4A7C15L;
    int slot = (int) (mix >>> 52); // 12 bits: MEMO_SLOTS
    int[] kept = memoTokens[slot];
    if (kept != null
        && memoParent[2 * slot] == parentHi
        && memoParent[2 * slot + 1] == parentLo
        && kept.length == count
        && Arrays.equals(kept, 0, count, tokens, from, from + count)) {
      out[outAt] = memoHash[2 * slot];
      out[outAt + 1] = memoHash[2 * slot + 1];
      return;
    }
    sha256(parentHi, parentLo, tokens, from, count, out, outAt);
    memoParent[2 * slot] = parentHi;
    memoParent[2 * slot + 1] = parentLo;
    memoHash[2 * slot] = out[outAt];
    memoHash[2 * slot + 1] = out[outAt + 1];
    if (kept != null && kept.length == count) {
      System.arraycopy(tokens, from, kept, 0, count);
    } else {
      memoTokens[slot] = Arrays.copyOfRange(tokens, from, from + count);
    }
  }

  private void sha256(long parentHi, long parentLo, int[] tokens, int from, int count, long[] out, int outAt) {
    int n = 5 + count;
    int total = (n + 3 + 15) & ~15; // n words, 0x80000000, zeros, two words of length
    if (total > words.length) {
      words = new int[total];
    }
    int[] m = words;
    m[0] = (int) (parentHi >>> 32);
    m[1] = (int) parentHi;
    m[2] = (int) (parentLo >>> 32);
    m[3] = (int) parentLo;
    m[4] = count;
    System.arraycopy(tokens, from, m, 5, count);
    m[n] = 0x80000000;
    for (int k = n + 1; k < total - 2; k++) {
      m[k] = 0;
    }
    long bits = 32L * n;
    m[total - 2] = (int) (bits >>> 32);
    m[total - 1] = (int) bits;
    System.arraycopy(SHA256_IV, 0, state, 0, 8);
    for (int off = 0; off < total; off += 16) {
      compress(m, off);
    }
    out[outAt] = ((long) state[0] << 32) | (state[1] & 0xffffffffL);
    out[outAt + 1] = ((long) state[2] << 32) | (state[3] & 0xffffffffL);
  }

  /** One SHA-256 compression of words {@code m[off, off + 16)} into {@link #state} (FIPS 180-4, 6.2.2). */
  private void compress(int[] m, int off) {
    int[] w = schedule;
    System.arraycopy(m, off, w, 0, 16);
    for (int t = 16; t < 64; t++) {
      int x = w[t - 15];
      int y = w[t - 2];
      int s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      int s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    int[] s = state;
    int a = s[0];
    int b = s[1];
    int c = s[2];
    int d = s[3];
    int e = s[4];
    int f = s[5];
    int g = s[6];
    int h = s[7];
    for (int t = 0; t < 64; t += 8) {
      h += ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      h += (g ^ (e & (f ^ g))) + SHA256_K[t + 0] + w[t + 0];
      d += h;
      h += (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) ^ ((a ^ b) & c));
      g += ((d >>> 6) | (d << 26)) ^ ((d >>> 11) | (d << 21)) ^ ((d >>> 25) | (d << 7));
      g += (f ^ (d & (e ^ f))) + SHA256_K[t + 1] + w[t + 1];
      c += g;
      g += (((h >>> 2) | (h << 30)) ^ ((h >>> 13) | (h << 19)) ^ ((h >>> 22) | (h << 10))) + ((h & a) ^ ((h ^ a) & b));
      f += ((c >>> 6) | (c << 26)) ^ ((c >>> 11) | (c << 21)) ^ ((c >>> 25) | (c << 7));
      f += (e ^ (c & (d ^ e))) + SHA256_K[t + 2] + w[t + 2];
      b += f;
      f += (((g >>> 2) | (g << 30)) ^ ((g >>> 13) | (g << 19)) ^ ((g >>> 22) | (g << 10))) + ((g & h) ^ ((g ^ h) & a));
      e += ((b >>> 6) | (b << 26)) ^ ((b >>> 11) | (b << 21)) ^ ((b >>> 25) | (b << 7));
      e += (d ^ (b & (c ^ d))) + SHA256_K[t + 3] + w[t + 3];
      a += e;
      e += (((f >>> 2) | (f << 30)) ^ ((f >>> 13) | (f << 19)) ^ ((f >>> 22) | (f << 10))) + ((f & g) ^ ((f ^ g) & h));
      d += ((a >>> 6) | (a << 26)) ^ ((a >>> 11) | (a << 21)) ^ ((a >>> 25) | (a << 7));
      d += (c ^ (a & (b ^ c))) + SHA256_K[t + 4] + w[t + 4];
      h += d;
      d += (((e >>> 2) | (e << 30)) ^ ((e >>> 13) | (e << 19)) ^ ((e >>> 22) | (e << 10))) + ((e & f) ^ ((e ^ f) & g));
      c += ((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^ ((h >>> 25) | (h << 7));
      c += (b ^ (h & (a ^ b))) + SHA256_K[t + 5] + w[t + 5];
      g += c;
      c += (((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^ ((d >>> 22) | (d << 10))) + ((d & e) ^ ((d ^ e) & f));
      b += ((g >>> 6) | (g << 26)) ^ ((g >>> 11) | (g << 21)) ^ ((g >>> 25) | (g << 7));
      b += (a ^ (g & (h ^ a))) + SHA256_K[t + 6] + w[t + 6];
      f += b;
      b += (((c >>> 2) | (c << 30)) ^ ((c >>> 13) | (c << 19)) ^ ((c >>> 22) | (c << 10))) + ((c & d) ^ ((c ^ d) & e));
      a += ((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) ^ ((f >>> 25) | (f << 7));
      a += (h ^ (f & (g ^ h))) + SHA256_K[t + 7] + w[t + 7];
      e += a;
      a += (((b >>> 2) | (b << 30)) ^ ((b >>> 13) | (b << 19)) ^ ((b >>> 22) | (b << 10))) + ((b & c) ^ ((b ^ c) & d));
    }
    s[0] += a;
    s[1] += b;
    s[2] += c;
    s[3] += d;
    s[4] += e;
    s[5] += f;
    s[6] += g;
    s[7] += h;
  }

  /**
   * MurmurHash3 x64 128 (Austin Appleby's reference, seed 0) of {@code data[0, length)}: h1 into
   * {@code out[outAt]}, h2 into {@code out[outAt + 1]}.
   */
  static void murmur3(byte[] data, int length, long[] out, int outAt) {
    final long c1 = 0x87c37b91114253d5L;
    final long c2 = 0x4cf5ad432745937fL;
    long h1 = 0;
    long h2 = 0;
    int tail = length & ~15;
    for (int i = 0; i < tail; i += 16) {
      long k1 = (long) LITTLE_ENDIAN_LONG.get(data, i);
      long k2 = (long) LITTLE_ENDIAN_LONG.get(data, i + 8);
      h1 ^= Long.rotateLeft(k1 * c1, 31) * c2;
      h1 = (Long.rotateLeft(h1, 27) + h2) * 5 + 0x52dce729;
      h2 ^= Long.rotateLeft(k2 * c2, 33) * c1;
      h2 = (Long.rotateLeft(h2, 31) + h1) * 5 + 0x38495ab5;
    }
    int rest = length - tail;
    if (rest > 8) {
      long k2 = 0;
      for (int j = rest - 1; j >= 8; j--) {
        k2 = (k2 << 8) | (data[tail + j] & 0xff);
      }
      h2 ^= Long.rotateLeft(k2 * c2, 33) * c1;
    }
    if (rest > 0) {
      long k1 = 0;
      for (int j = Math.min(rest, 8) - 1; j >= 0; j--) {
        k1 = (k1 << 8) | (data[tail + j] & 0xff);
      }
      h1 ^= Long.rotateLeft(k1 * c1, 31) * c2;
    }
    finish(h1, h2, length, out, outAt);
  }

  // Note [MurmurHash3 over words]: without extra keys the canonical encoding is whole big-endian
  // words (Note [SHA-256 over words]), and MurmurHash3 reads its input as little-endian longs, two
  // words each: the long of words a, b is the byte reversal of (a << 32 | b). So the words go in as
  // they are, without being written into bytes that are read back (the bytes path, murmur3, stays
  // for blocks with extra keys and is the reference BlockHasherTest compares both with). Serving
  // runs hash every block they fill this way; JMH BlockHashBenchmark (MURMUR3): 52 to 44 ns a block.

  /** {@link #murmur3} of the canonical encoding of a block without extra keys, read as words. */
  private void murmur3Words(long parentHi, long parentLo, int[] tokens, int from, int count, long[] out, int outAt) {
    int n = 1 + count; // the words after the parent hash: the count, then the tokens
    if (n > words.length) {
      words = new int[Math.max(n, 2 * words.length)];
    }
    int[] w = words;
    w[0] = count;
    System.arraycopy(tokens, from, w, 1, count);
    final long c1 = 0x87c37b91114253d5L;
    final long c2 = 0x4cf5ad432745937fL;
    // the first 16 bytes: the parent hash's two longs, big-endian
    long h1 = Long.rotateLeft(Long.reverseBytes(parentHi) * c1, 31) * c2;
    h1 = Long.rotateLeft(h1, 27) * 5 + 0x52dce729;
    long h2 = Long.rotateLeft(Long.reverseBytes(parentLo) * c2, 33) * c1;
    h2 = (Long.rotateLeft(h2, 31) + h1) * 5 + 0x38495ab5;
    int whole = n & ~3;
    for (int i = 0; i < whole; i += 4) {
      long k1 = wordPair(w[i], w[i + 1]);
      long k2 = wordPair(w[i + 2], w[i + 3]);
      h1 ^= Long.rotateLeft(k1 * c1, 31) * c2;
      h1 = (Long.rotateLeft(h1, 27) + h2) * 5 + 0x52dce729;
      h2 ^= Long.rotateLeft(k2 * c2, 33) * c1;
      h2 = (Long.rotateLeft(h2, 31) + h1) * 5 + 0x38495ab5;
    }
    int rest = n - whole; // 0 to 3 words: 0 to 12 bytes of tail
    if (rest == 3) {
      h2 ^= Long.rotateLeft(wordAlone(w[whole + 2]) * c2, 33) * c1;
    }
    if (rest >= 2) {
      h1 ^= Long.rotateLeft(wordPair(w[whole], w[whole + 1]) * c1, 31) * c2;
    } else if (rest == 1) {
      h1 ^= Long.rotateLeft(wordAlone(w[whole]) * c1, 31) * c2;
    }
    finish(h1, h2, 16 + 4L * n, out, outAt);
  }

  /** MurmurHash3's finalization of {@code h1}, {@code h2} after {@code length} bytes, into {@code out[outAt]} and {@code out[outAt + 1]}. */
  private static void finish(long h1, long h2, long length, long[] out, int outAt) {
    h1 ^= length;
    h2 ^= length;
    h1 += h2;
    h2 += h1;
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 += h2;
    h2 += h1;
    out[outAt] = h1;
    out[outAt + 1] = h2;
  }

  /** The little-endian long of the eight bytes of big-endian words {@code a}, {@code b}. */
  private static long wordPair(int a, int b) {
    return Long.reverseBytes(((long) a << 32) | (b & 0xffffffffL));
  }

  /** The little-endian value of the four bytes of big-endian word {@code a}, as a tail of four bytes. */
  private static long wordAlone(int a) {
    return Integer.reverseBytes(a) & 0xffffffffL;
  }

  private static long fmix64(long k) {
    k ^= k >>> 33;
    k *= 0xff51afd7ed558ccdL;
    k ^= k >>> 33;
    k *= 0xc4ceb9fe1a85ec53L;
    return k ^ (k >>> 33);
  }

  /** Returns the UTF-8 bytes of an extra key, or null for none. */
  static byte[] utf8(String key) {
    return key == null ? null : key.getBytes(StandardCharsets.UTF_8);
  }

  /** Returns the first {@code hexDigits} hex digits of a hash, high half first. */
  public static String hexPrefix(long hi, long lo, int hexDigits) {
    char[] out = new char[Math.min(hexDigits, 32)];
    for (int i = 0; i < out.length; i++) {
      long half = i < 16 ? hi : lo;
      int shift = 60 - 4 * (i & 15);
      out[i] = Character.forDigit((int) (half >>> shift) & 0xf, 16);
    }
    return new String(out);
  }

  private static int writeLong(byte[] b, int p, long v) {
    BIG_ENDIAN_LONG.set(b, p, v);
    return p + 8;
  }

  private static int writeInt(byte[] b, int p, int v) {
    BIG_ENDIAN_INT.set(b, p, v);
    return p + 4;
  }

  private static long readLong(byte[] b, int p) {
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (b[p + i] & 0xff);
    }
    return v;
  }
}
