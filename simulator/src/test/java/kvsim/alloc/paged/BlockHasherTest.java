package kvsim.alloc.paged;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import org.junit.jupiter.api.Test;

/** The block hash is SHA-256 (or MurmurHash3 x64 128) of the documented canonical encoding, truncated to 128 bits. */
class BlockHasherTest {

  private static long[] direct(long parentHi, long parentLo, int[] tokens, String lora, String salt) throws Exception {
    byte[] e = encoding(parentHi, parentLo, tokens, lora, salt);
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    sha.update(e);
    ByteBuffer d = ByteBuffer.wrap(sha.digest());
    return new long[] {d.getLong(), d.getLong()};
  }

  /** The canonical encoding of Note [Block hash], written with a ByteBuffer. */
  private static byte[] encoding(long parentHi, long parentLo, int[] tokens, String lora, String salt) {
    byte[] l = lora == null ? null : lora.getBytes(StandardCharsets.UTF_8);
    byte[] s = salt == null ? null : salt.getBytes(StandardCharsets.UTF_8);
    ByteBuffer b = ByteBuffer.allocate(1024);
    b.putLong(parentHi).putLong(parentLo).putInt(tokens.length);
    for (int t : tokens) {
      b.putInt(t);
    }
    if (l != null) {
      b.put((byte) 'L').putInt(l.length).put(l);
    }
    if (s != null) {
      b.put((byte) 'S').putInt(s.length).put(s);
    }
    return java.util.Arrays.copyOf(b.array(), b.position());
  }

  @Test
  void theHashIsSha256OfTheCanonicalEncodingTruncatedTo128Bits() throws Exception {
    for (boolean inJava : new boolean[] {false, true}) {
      theHashIsSha256OfTheCanonicalEncoding(new BlockHasher(BlockHasher.Algorithm.SHA256, inJava));
    }
  }

  private static void theHashIsSha256OfTheCanonicalEncoding(BlockHasher h) throws Exception {
    int[] tokens = {5, 70000, -1 >>> 1, 0};
    long[] out = new long[4];
    h.hashBlock(BlockHasher.NONE_HI, BlockHasher.NONE_LO, tokens, 0, 4, null, null, out, 0);
    long[] want = direct(BlockHasher.NONE_HI, BlockHasher.NONE_LO, tokens, null, null);
    assertEquals(want[0], out[0]);
    assertEquals(want[1], out[1]);
    h.hashBlock(out[0], out[1], tokens, 1, 3, BlockHasher.utf8("lora-é"), BlockHasher.utf8("salt"), out, 2);
    long[] want2 = direct(out[0], out[1], new int[] {70000, -1 >>> 1, 0}, "lora-é", "salt");
    assertEquals(want2[0], out[2]);
    assertEquals(want2[1], out[3]);
  }

  @Test
  void blocksWithoutExtraKeysHashAsMessageDigestHashesTheirEncoding() throws Exception {
    // Note [SHA-256 over words]: every padding case (1 to 3 message blocks, the length word at
    // each place) and random parents and tokens, against MessageDigest over the bytes.
    java.util.SplittableRandom r = new java.util.SplittableRandom(11);
    BlockHasher h = new BlockHasher(BlockHasher.Algorithm.SHA256, true);
    int[] tokens = new int[200];
    long[] out = new long[2];
    for (int count = 1; count <= 60; count++) {
      for (int k = 0; k < tokens.length; k++) {
        tokens[k] = r.nextInt() & Integer.MAX_VALUE;
      }
      long hi = r.nextLong();
      long lo = r.nextLong();
      int from = r.nextInt(100);
      h.hashBlock(hi, lo, tokens, from, count, null, null, out, 0);
      long[] want = direct(hi, lo, java.util.Arrays.copyOfRange(tokens, from, from + count), null, null);
      assertEquals(want[0], out[0], "count " + count);
      assertEquals(want[1], out[1], "count " + count);
    }
  }

  @Test
  void hashesKeptForSharedPrefixesAreThoseOfTheirInputs() throws Exception {
    // Note [Hashes of shared prefixes]: prompts sharing a prefix, then diverging under the same
    // parent (same parent, other tokens), a token changed in place, and another block count.
    java.util.SplittableRandom r = new java.util.SplittableRandom(5);
    BlockHasher h = new BlockHasher(BlockHasher.Algorithm.SHA256, true);
    int[] shared = new int[64];
    for (int k = 0; k < shared.length; k++) {
      shared[k] = r.nextInt(32_000);
    }
    for (int prompt = 0; prompt < 40; prompt++) {
      int[] tokens = shared.clone();
      int diverge = r.nextInt(64);
      for (int k = diverge; k < 64; k++) {
        tokens[k] = r.nextInt(32_000);
      }
      int count = prompt % 5 == 0 ? 8 : 16;
      long[] out = {BlockHasher.NONE_HI, BlockHasher.NONE_LO};
      for (int from = 0; from + count <= 64; from += count) {
        long hi = out[0];
        long lo = out[1];
        h.hashBlock(hi, lo, tokens, from, count, null, null, out, 0);
        long[] want = direct(hi, lo, java.util.Arrays.copyOfRange(tokens, from, from + count), null, null);
        assertEquals(want[0], out[0], "prompt " + prompt + " block at " + from);
        assertEquals(want[1], out[1], "prompt " + prompt + " block at " + from);
      }
      shared[r.nextInt(64)] = r.nextInt(32_000); // the next prompts share a prefix changed in one place
    }
  }

  @Test
  void theNoneHashIsFixedSoHashesAreReproducible() throws Exception {
    ByteBuffer d =
        ByteBuffer.wrap(MessageDigest.getInstance("SHA-256").digest("kvsim NONE_HASH".getBytes(StandardCharsets.US_ASCII)));
    assertEquals(d.getLong(), BlockHasher.NONE_HI);
    assertEquals(d.getLong(), BlockHasher.NONE_LO);
  }

  @Test
  void anEmptyExtraKeyDiffersFromNone() {
    BlockHasher h = new BlockHasher();
    long[] out = new long[4];
    int[] tokens = {1, 2};
    h.hashBlock(0, 0, tokens, 0, 2, null, null, out, 0);
    h.hashBlock(0, 0, tokens, 0, 2, new byte[0], null, out, 2);
    assertNotEquals(out[0], out[2]);
  }

  @Test
  void theHexPrefixReadsTheHighHalfFirst() {
    assertEquals("0123456789abcdef", BlockHasher.hexPrefix(0x0123456789abcdefL, 0xfedcba9876543210L, 16));
    assertEquals("0123456789abcdeffe", BlockHasher.hexPrefix(0x0123456789abcdefL, 0xfedcba9876543210L, 18));
  }

  @Test
  void murmur3IsTheReferenceMurmurHash3OfTheSameEncoding() throws Exception {
    BlockHasher h = new BlockHasher(BlockHasher.Algorithm.MURMUR3);
    java.util.SplittableRandom r = new java.util.SplittableRandom(7);
    long[] out = new long[2];
    // Every tail length (the encoding is 20 + 4 k bytes, plus the extra keys), and block sizes up to 64 tokens.
    for (int n = 0; n <= 64; n++) {
      for (String lora : new String[] {null, "a", "lora-é", "abcdefghijk"}) {
        for (String salt : new String[] {null, "", "s2"}) {
          int[] tokens = r.ints(n).toArray();
          long hi = r.nextLong();
          long lo = r.nextLong();
          h.hashBlock(hi, lo, tokens, 0, n, BlockHasher.utf8(lora), BlockHasher.utf8(salt), out, 0);
          byte[] e = encoding(hi, lo, tokens, lora, salt);
          long[] want = org.apache.commons.codec.digest.MurmurHash3.hash128x64(e, 0, e.length, 0);
          assertEquals(want[0], out[0], n + " tokens, " + lora + ", " + salt);
          assertEquals(want[1], out[1], n + " tokens, " + lora + ", " + salt);
        }
      }
    }
    for (int length = 0; length <= 40; length++) { // and every length of raw bytes, tails included
      byte[] data = new byte[length];
      r.nextBytes(data);
      BlockHasher.murmur3(data, length, out, 0);
      long[] want = org.apache.commons.codec.digest.MurmurHash3.hash128x64(data, 0, length, 0);
      assertEquals(want[0], out[0], length + " bytes");
      assertEquals(want[1], out[1], length + " bytes");
    }
  }
}
