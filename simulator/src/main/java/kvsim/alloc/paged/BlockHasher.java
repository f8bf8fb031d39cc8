package kvsim.alloc.paged;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.DigestException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

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
  private final MessageDigest sha;
  private final byte[] digest = new byte[32];
  private byte[] buf = new byte[256];

  /** Builds a SHA-256 hasher; not thread-safe (one per manager). */
  public BlockHasher() {
    this(Algorithm.SHA256);
  }

  /** Builds a hasher of {@code algorithm}; not thread-safe (one per manager). */
  public BlockHasher(Algorithm algorithm) {
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
