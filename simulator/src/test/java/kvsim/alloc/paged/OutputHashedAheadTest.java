package kvsim.alloc.paged;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.SplittableRandom;
import kvsim.registry.AllocatorRegistry;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;

/**
 * Prompts prepared with the tokens expected after them (Note [Output hashed ahead] on
 * PromptHasher) give a request the same tokens and block hashes as the plain path, step by step,
 * whether the tokens appended are the expected ones (then the hashes ahead are taken) or one of
 * them differs (then they are dropped from there).
 */
class OutputHashedAheadTest {
  private static final int MAX_MODEL_LEN = 4096;

  private static BlockManager manager(int blockSize) {
    return (BlockManager) AllocatorRegistry.blockManager(new BlockManagerConfig(4096, blockSize, true, BlockManagerConfig.Mode.V1, 0,
        BlockManagerConfig.FreeOrder.FIFO, 0, MAX_MODEL_LEN, 1024));
  }

  private static int[] prompt(int length, int bufferLength) {
    int[] buffer = new int[bufferLength];
    for (int i = 0; i < length; i++) {
      buffer[i] = 11 * i + 3;
    }
    return buffer;
  }

  private static void assertSameRequest(BlockManager plain, PagedRequest p, BlockManager ahead, PagedRequest a) {
    assertArrayEquals(p.tokens(), a.tokens());
    assertEquals(p.numHashes, a.numHashes);
    for (int i = 0; i < p.numHashes; i++) {
      assertEquals(plain.blockHashPrefix(p, i), ahead.blockHashPrefix(a, i), "block " + i);
    }
  }

  @Property(tries = 200)
  void expectedOrNotTheRequestIsTheSame(
      @ForAll @LongRange(min = 1, max = 1_000_000) long seed,
      @ForAll @IntRange(min = 1, max = 900) int promptLength,
      @ForAll @IntRange(min = 1, max = 300) int outputs,
      @ForAll @IntRange(min = -1, max = 300) int differAt,
      @ForAll @IntRange(min = 0, max = 2) int blockSizeChoice,
      @ForAll boolean hashIds) {
    int blockSize = new int[] {16, 4, 32}[blockSizeChoice];
    int first = -77;
    int base = 50_000;
    BlockManager plain = manager(blockSize);
    BlockManager ahead = manager(blockSize);
    long[] ids = null;
    if (hashIds) {
      ids = new long[promptLength / blockSize];
      SplittableRandom rng = new SplittableRandom(seed);
      for (int i = 0; i < ids.length; i++) {
        ids[i] = rng.nextLong();
      }
    }
    int bufferLength = promptLength + outputs;
    PagedRequest p = plain.addRequest("r", prompt(promptLength, bufferLength), promptLength, ids);
    PromptHasher.Prepared prepared = ahead.promptHasher().prepare(prompt(promptLength, bufferLength), promptLength, ids, outputs, first, base);
    PagedRequest a = ahead.addRequest("r", prepared);
    assertEquals((promptLength + outputs) / blockSize, a.hashedAhead, "the blocks the expected tokens complete are hashed ahead");
    assertSameRequest(plain, p, ahead, a);
    for (int k = 0; k < outputs; k++) {
      int token = k == 0 ? first : base + k;
      if (k == differAt) {
        token = -token - 1;
      }
      plain.appendTokens(p, new int[] {token});
      ahead.appendTokens(a, new int[] {token});
      assertSameRequest(plain, p, ahead, a);
    }
    if (differAt >= 0 && differAt < outputs) {
      assertEquals(0, a.hashedAhead, "a token not expected drops the hashes ahead");
    } else {
      assertEquals(a.hashedAhead, a.numHashes, "every hash came from ahead");
    }
    ahead.checkInvariants();
  }

  @Test
  void moreExpectedTokensThanTheBufferHoldsAreRefused() {
    BlockManager m = manager(16);
    assertThrows(IllegalArgumentException.class, () -> m.promptHasher().prepare(prompt(10, 20), 10, null, 11, 1, 2));
    assertEquals(20, m.promptHasher().prepare(prompt(10, 20), 10, null, 10, 1, 2).expectedTokens);
  }
}
