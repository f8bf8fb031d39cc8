package kvsim.alloc;

import java.util.List;

/**
 * One segment and the blocks that tile it, in address order.
 *
 * @param addressBytes segment start
 * @param sizeBytes segment length
 * @param pool pool or class name ({@code large}, {@code small}, {@code 2MiB}, {@code region})
 * @param stream stream the segment belongs to
 * @param expandable whether it is an expandable (virtual, mapped on demand) segment
 * @param blocks the blocks, tiling [address, address + size) without gaps
 */
public record SegmentLayout(
    long addressBytes, long sizeBytes, String pool, long stream, boolean expandable, List<Block> blocks) {

  /** Block states, as in PyTorch's snapshots. */
  public enum State {
    ACTIVE_ALLOCATED("active_allocated"),
    INACTIVE("inactive");

    private final String label;

    State(String label) {
      this.label = label;
    }

    public String label() {
      return label;
    }
  }

  /**
   * A block of a segment.
   *
   * @param addressBytes block start
   * @param sizeBytes block length
   * @param requestedBytes bytes the caller asked for (0 for free blocks)
   * @param state allocated or free
   */
  public record Block(long addressBytes, long sizeBytes, long requestedBytes, State state) {}
}
