package kvsim.alloc.paged;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import org.junit.jupiter.api.Test;

/** The block hash is SHA-256 of the documented canonical encoding, truncated to 128 bits. */
class BlockHasherTest {

  private static long[] direct(long parentHi, long parentLo, int[] tokens, String lora, String salt) throws Exception {
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
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    sha.update(b.array(), 0, b.position());
    ByteBuffer d = ByteBuffer.wrap(sha.digest());
    return new long[] {d.getLong(), d.getLong()};
  }

  @Test
  void theHashIsSha256OfTheCanonicalEncodingTruncatedTo128Bits() throws Exception {
    BlockHasher h = new BlockHasher();
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
}
