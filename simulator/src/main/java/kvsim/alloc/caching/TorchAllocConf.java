package kvsim.alloc.caching;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The options of PyTorch's caching allocator that change placement, in PyTorch's own {@code
 * PYTORCH_CUDA_ALLOC_CONF} syntax, for example {@code
 * expandable_segments:True,max_split_size_mb:512,roundup_power2_divisions:[256:1,512:2,>:8]}.
 *
 * <p>Parsing rules, after PyTorch's two generations of option parser: "cfg1", {@code
 * c10/cuda/CUDAAllocatorConfig.cpp} of the 2.6-2.8 era (header read at pytorch/pytorch @012117c),
 * and "cfg2", {@code c10/core/AllocatorConfig.cpp} of 2025-26 (where the options moved with PR
 * #149601 and {@code PYTORCH_ALLOC_CONF} became the canonical name):
 *
 * <ul>
 *   <li>The text is cut into tokens at {@code ,}, {@code :}, {@code [} and {@code ]}; spaces are
 *       dropped. Items are {@code key:value} separated by commas; an empty string means defaults.
 *   <li>{@code max_split_size_mb} and {@code max_non_split_rounding_mb}: an integer number of MiB,
 *       at least 20 (cfg2 accepts 20; cfg1 required more than 20). Stored as value × 2^20.
 *   <li>{@code roundup_power2_divisions}: a single power of two for all 16 intervals, or a list
 *       {@code [b1:d1,b2:d2,…,>:dN]} whose keys are powers of two in MiB (interval index {@code
 *       log2(b)}, clamped to [0, 15]) and whose values are 0 or powers of two. The first key also
 *       fills every lower interval; {@code >} fills every interval after the last key (from the
 *       last index + 1 in current PyTorch; {@link Dialect#LEGACY} reproduces the cfg1-era parser,
 *       which fills from the last index itself). Intervals never named stay 0, as in both parsers
 *       (PR #93942's description says they inherit the previous value; the code does not).
 *   <li>{@code garbage_collection_threshold}: a fraction strictly between 0 and 1.
 *   <li>{@code expandable_segments}, {@code throw_on_cudamalloc_oom}: {@code True} or {@code False}
 *       (exactly these spellings, as PyTorch requires).
 *   <li>{@code large_segment_size_mb} (PR #172056): a positive even number of MiB (segments and
 *       pages are multiples of 2 MiB); it also becomes the default of {@code
 *       max_non_split_rounding_mb}.
 *   <li>{@code per_process_memory_fraction}: a number in [0, 1]; 1 means no limit (as PyTorch C
 *       treats it).
 *   <li>{@code backend:native} is accepted; {@code backend:cudaMallocAsync} replaces this whole
 *       allocator and is refused. Options without effect on placement ({@code
 *       release_lock_on_cudamalloc}, {@code pinned_*}, {@code graph_capture_record_stream_reuse},
 *       {@code expandable_segments_handle_type}) are accepted and ignored.
 *   <li>Anything else (unknown key, missing value, bad number) is an error whose message names the
 *       option, like PyTorch's own {@code TORCH_CHECK} messages.
 * </ul>
 */
public final class TorchAllocConf {
  /** One MiB. */
  static final long MiB = 1L << 20;
  /** Intervals of {@code roundup_power2_divisions} (PyTorch's kRoundUpPowerOfTwoIntervals). */
  public static final int ROUNDUP_INTERVALS = 16;
  /** {@code max_split_size} when unset (SIZE_MAX in PyTorch; -1 in snapshots). */
  public static final long UNLIMITED = Long.MAX_VALUE;
  /** Default large segment size and large expandable page size: 20 MiB (PyTorch's kLargeBuffer). */
  public static final long DEFAULT_LARGE_SEGMENT_BYTES = 20 * MiB;

  /** Which parser generation (cfg1 or cfg2) to follow where they differ: the {@code >} key. */
  public enum Dialect {
    /** Current PyTorch (cfg2, 2026 main): {@code >} fills from the index after the last key. */
    CURRENT,
    /** The cfg1-era parser (~2.6-2.8): {@code >} fills from the last key's index, overwriting it. */
    LEGACY
  }

  private static final TorchAllocConf DEFAULTS = new Builder().build();

  private final String text;
  private final long maxSplitSizeBytes;
  private final long maxNonSplitRoundingBytes;
  private final int[] roundupPower2Divisions;
  private final double garbageCollectionThreshold;
  private final boolean expandableSegments;
  private final long largeSegmentSizeBytes;
  private final double perProcessMemoryFraction;
  private final boolean throwOnCudamallocOom;

  private TorchAllocConf(Builder b) {
    this.text = b.text;
    this.maxSplitSizeBytes = b.maxSplitSizeBytes;
    this.largeSegmentSizeBytes = b.largeSegmentSizeBytes;
    this.maxNonSplitRoundingBytes =
        b.maxNonSplitRoundingBytes > 0 ? b.maxNonSplitRoundingBytes : b.largeSegmentSizeBytes;
    this.roundupPower2Divisions = b.divisions.clone();
    this.garbageCollectionThreshold = b.garbageCollectionThreshold;
    this.expandableSegments = b.expandableSegments;
    this.perProcessMemoryFraction = b.perProcessMemoryFraction;
    this.throwOnCudamallocOom = b.throwOnCudamallocOom;
  }

  /** Returns the default configuration (every option at PyTorch's default). */
  public static TorchAllocConf defaults() {
    return DEFAULTS;
  }

  /** Parses a configuration string with the current PyTorch rules. */
  public static TorchAllocConf parse(String text) {
    return parse(text, Dialect.CURRENT);
  }

  /**
   * Parses a configuration string; throws {@link IllegalArgumentException} with a one-line message
   * naming the option when it is malformed.
   */
  public static TorchAllocConf parse(String text, Dialect dialect) {
    Builder b = new Builder();
    b.text = text == null ? "" : text;
    new Parser(lex(b.text), b, dialect).run();
    return b.build();
  }

  /** Returns a builder starting from the defaults (used to rebuild a snapshot's settings). */
  public static Builder builder() {
    return new Builder();
  }

  private static List<String> lex(String s) {
    List<String> out = new ArrayList<>();
    StringBuilder buf = new StringBuilder();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == ',' || c == ':' || c == '[' || c == ']') {
        if (buf.length() > 0) {
          out.add(buf.toString());
          buf.setLength(0);
        }
        out.add(String.valueOf(c));
      } else if (!Character.isWhitespace(c)) {
        buf.append(c);
      }
    }
    if (buf.length() > 0) {
      out.add(buf.toString());
    }
    return out;
  }

  private static final class Parser {
    private final List<String> tokens;
    private final Builder b;
    private final Dialect dialect;
    private int i;

    Parser(List<String> tokens, Builder b, Dialect dialect) {
      this.tokens = tokens;
      this.b = b;
      this.dialect = dialect;
    }

    void run() {
      while (i < tokens.size()) {
        String key = tokens.get(i++);
        if (isPunct(key)) {
          throw error("expected an option name, got '" + key + "'");
        }
        expect(":", key);
        switch (key) {
          case "max_split_size_mb" -> b.maxSplitSizeBytes = megabytesAtLeast20(key, value(key));
          case "max_non_split_rounding_mb" -> b.maxNonSplitRoundingBytes = megabytesAtLeast20(key, value(key));
          case "garbage_collection_threshold" -> {
            String v = value(key);
            double t = number(key, v);
            if (!(t > 0.0)) {
              throw error("garbage_collection_threshold too small, set it 0.0~1.0 (got " + v + ")");
            }
            if (!(t < 1.0)) {
              throw error("garbage_collection_threshold too big, set it 0.0~1.0 (got " + v + ")");
            }
            b.garbageCollectionThreshold = t;
          }
          case "roundup_power2_divisions" -> divisions();
          case "expandable_segments" -> b.expandableSegments = bool(key, value(key));
          case "throw_on_cudamalloc_oom" -> b.throwOnCudamallocOom = bool(key, value(key));
          case "large_segment_size_mb" -> {
            String v = value(key);
            long mb = integer(key, v);
            if (mb <= 0 || mb % 2 != 0 || mb > Long.MAX_VALUE / MiB) {
              throw error("large_segment_size_mb must be a positive even number of MiB (got " + v + ")");
            }
            b.largeSegmentSizeBytes = mb * MiB;
          }
          case "per_process_memory_fraction" -> {
            String v = value(key);
            double f = number(key, v);
            if (!(f >= 0.0 && f <= 1.0)) {
              throw error("per_process_memory_fraction must be in [0, 1] (got " + v + ")");
            }
            b.perProcessMemoryFraction = f;
          }
          case "backend" -> {
            String v = value(key);
            if (v.equals("cudaMallocAsync")) {
              throw error("backend:cudaMallocAsync replaces the caching allocator and is not modelled; use backend:native");
            }
            if (!v.equals("native")) {
              throw error("unknown allocator backend '" + v + "' (native or cudaMallocAsync)");
            }
          }
          case "release_lock_on_cudamalloc",
              "pinned_use_cuda_host_register",
              "pinned_use_host_register",
              "pinned_num_register_threads",
              "pinned_use_background_threads",
              "pinned_reserve_segment_size_mb",
              "graph_capture_record_stream_reuse",
              "expandable_segments_handle_type" -> value(key);
          default -> throw error("Unrecognized CachingAllocator option: " + key + " (known: max_split_size_mb, max_non_split_rounding_mb,"
              + " garbage_collection_threshold, roundup_power2_divisions, expandable_segments, throw_on_cudamalloc_oom, large_segment_size_mb,"
              + " per_process_memory_fraction, backend; accepted and not modelled: release_lock_on_cudamalloc, pinned_use_cuda_host_register,"
              + " pinned_use_host_register, pinned_num_register_threads, pinned_use_background_threads, pinned_reserve_segment_size_mb,"
              + " graph_capture_record_stream_reuse, expandable_segments_handle_type)");
        }
        if (i < tokens.size()) {
          expect(",", key);
          if (i == tokens.size()) {
            throw error("trailing ',' after option " + key);
          }
        }
      }
    }

    private void divisions() {
      String key = "roundup_power2_divisions";
      if (i < tokens.size() && tokens.get(i).equals("[")) {
        i++;
        int[] d = new int[ROUNDUP_INTERVALS];
        boolean first = true;
        int lastIndex = 0;
        boolean closed = false;
        while (i < tokens.size()) {
          String k = tokens.get(i++);
          if (k.equals("]")) {
            closed = true;
            break;
          }
          if (isPunct(k)) {
            throw error(key + ": expected an interval (a power of two in MiB, or '>') , got '" + k + "'");
          }
          expect(":", key + " interval " + k);
          String v = value(key);
          long div = integer(key, v);
          if (div != 0 && Long.bitCount(div) != 1 || div > Integer.MAX_VALUE) {
            throw error("For roundups, the divisions has to be power of 2 or 0 to disable roundup (got " + v + ")");
          }
          if (k.equals(">")) {
            int from = dialect == Dialect.CURRENT && !first ? lastIndex + 1 : lastIndex;
            for (int j = from; j < ROUNDUP_INTERVALS; j++) {
              d[j] = (int) div;
            }
          } else {
            long interval = integer(key, k);
            if (interval <= 0 || Long.bitCount(interval) != 1) {
              throw error("For roundups, the intervals have to be power of 2 (got " + k + ")");
            }
            int index = Math.min(63 - Long.numberOfLeadingZeros(interval), ROUNDUP_INTERVALS - 1);
            if (first) {
              for (int j = 0; j < index; j++) {
                d[j] = (int) div;
              }
              first = false;
            }
            d[index] = (int) div;
            lastIndex = index;
          }
          if (i < tokens.size() && tokens.get(i).equals(",")) {
            i++;
          } else if (i < tokens.size() && !tokens.get(i).equals("]")) {
            throw error(key + ": expected ',' or ']' after " + k + ":" + v + ", got '" + tokens.get(i) + "'");
          }
        }
        if (!closed) {
          throw error(key + ": expected closing bracket ']'");
        }
        b.divisions = d;
      } else {
        String v = value(key);
        long div = integer(key, v);
        if (Long.bitCount(div) != 1 || div > Integer.MAX_VALUE) {
          throw error("For roundups, the divisions has to be power of 2 (got " + v + ")");
        }
        Arrays.fill(b.divisions, (int) div);
      }
    }

    private long megabytesAtLeast20(String key, String v) {
      long mb = integer(key, v);
      if (mb < 20) {
        throw error("CachingAllocator option " + key + " too small, must be >= 20 (got " + v + ")");
      }
      if (mb > Long.MAX_VALUE / MiB) {
        throw error("CachingAllocator option " + key + " too large, must be <= " + Long.MAX_VALUE / MiB + " (got " + v + ")");
      }
      return mb * MiB;
    }

    private static boolean isPunct(String t) {
      return t.equals(",") || t.equals(":") || t.equals("[") || t.equals("]");
    }

    private void expect(String punct, String after) {
      if (i >= tokens.size() || !tokens.get(i).equals(punct)) {
        String got = i >= tokens.size() ? "the end" : "'" + tokens.get(i) + "'";
        throw error("expected '" + punct + "' after " + after + ", got " + got);
      }
      i++;
    }

    private String value(String key) {
      if (i >= tokens.size() || isPunct(tokens.get(i))) {
        throw error("option " + key + " has no value");
      }
      return tokens.get(i++);
    }

    private long integer(String key, String v) {
      try {
        long x = Long.parseLong(v);
        if (x < 0) {
          throw error(key + ": '" + v + "' must not be negative");
        }
        return x;
      } catch (NumberFormatException e) {
        throw error(key + ": '" + v + "' is not an integer");
      }
    }

    private double number(String key, String v) {
      try {
        return Double.parseDouble(v);
      } catch (NumberFormatException e) {
        throw error(key + ": '" + v + "' is not a number");
      }
    }

    private boolean bool(String key, String v) {
      if (v.equals("True")) {
        return true;
      }
      if (v.equals("False")) {
        return false;
      }
      throw error("Expected a single True/False argument for " + key + " (got " + v + ")");
    }

    private IllegalArgumentException error(String message) {
      return new IllegalArgumentException(message);
    }
  }

  /** Returns the divisions in force for a size (interval {@code floor(log2) − 20}, clamped). */
  public int divisionsFor(long sizeBytes) {
    int log = 63 - Long.numberOfLeadingZeros(sizeBytes);
    int index = Math.max(0, Math.min(log - 20, ROUNDUP_INTERVALS - 1));
    return roundupPower2Divisions[index];
  }

  /** Returns the text this configuration was parsed from ("" for defaults). */
  public String text() {
    return text;
  }

  /** Returns {@code max_split_size} in bytes, {@link #UNLIMITED} when unset. */
  public long maxSplitSizeBytes() {
    return maxSplitSizeBytes;
  }

  /** Returns the slack an oversize request may take when reusing an oversize block. */
  public long maxNonSplitRoundingBytes() {
    return maxNonSplitRoundingBytes;
  }

  /** Returns a copy of the 16 per-interval divisions. */
  public int[] roundupPower2Divisions() {
    return roundupPower2Divisions.clone();
  }

  /** Returns the garbage-collection threshold (0 = off). */
  public double garbageCollectionThreshold() {
    return garbageCollectionThreshold;
  }

  /** Returns whether expandable segments (PyTorch PR #96995) are on. */
  public boolean expandableSegments() {
    return expandableSegments;
  }

  /** Returns the size of segments for 1-10 MiB requests and of large expandable pages. */
  public long largeSegmentSizeBytes() {
    return largeSegmentSizeBytes;
  }

  /** Returns the per-process memory fraction (1 = no limit). */
  public double perProcessMemoryFraction() {
    return perProcessMemoryFraction;
  }

  /** Returns whether a fraction ({@code set_per_process_memory_fraction}) is in force. */
  public boolean fractionSet() {
    return perProcessMemoryFraction < 1.0;
  }

  /** Returns whether an over-fraction new segment is refused without retries (PyTorch 2026 main). */
  public boolean throwOnCudamallocOom() {
    return throwOnCudamallocOom;
  }

  /** Returns the configuration in canonical PyTorch syntax, every option spelled out. */
  public String canonical() {
    StringBuilder sb = new StringBuilder();
    if (maxSplitSizeBytes != UNLIMITED) {
      sb.append("max_split_size_mb:").append(maxSplitSizeBytes / MiB).append(',');
    }
    if (maxNonSplitRoundingBytes != largeSegmentSizeBytes) {
      sb.append("max_non_split_rounding_mb:").append(maxNonSplitRoundingBytes / MiB).append(',');
    }
    boolean anyDivision = false;
    for (int d : roundupPower2Divisions) {
      anyDivision |= d != 0;
    }
    if (anyDivision) {
      sb.append("roundup_power2_divisions:[");
      for (int j = 0; j < ROUNDUP_INTERVALS; j++) {
        sb.append(1L << j).append(':').append(roundupPower2Divisions[j]).append(j + 1 < ROUNDUP_INTERVALS ? "," : "");
      }
      sb.append("],");
    }
    if (garbageCollectionThreshold > 0) {
      sb.append("garbage_collection_threshold:").append(garbageCollectionThreshold).append(',');
    }
    if (largeSegmentSizeBytes != DEFAULT_LARGE_SEGMENT_BYTES) {
      sb.append("large_segment_size_mb:").append(largeSegmentSizeBytes / MiB).append(',');
    }
    if (fractionSet()) {
      sb.append("per_process_memory_fraction:").append(perProcessMemoryFraction).append(',');
    }
    if (throwOnCudamallocOom) {
      sb.append("throw_on_cudamalloc_oom:True,");
    }
    sb.append("expandable_segments:").append(expandableSegments ? "True" : "False");
    return sb.toString();
  }

  @Override
  public String toString() {
    return canonical();
  }

  /** Builds a configuration field by field (for snapshot settings, which are not a string). */
  public static final class Builder {
    private String text = "";
    private long maxSplitSizeBytes = UNLIMITED;
    private long maxNonSplitRoundingBytes = -1;
    private int[] divisions = new int[ROUNDUP_INTERVALS];
    private double garbageCollectionThreshold;
    private boolean expandableSegments;
    private long largeSegmentSizeBytes = DEFAULT_LARGE_SEGMENT_BYTES;
    private double perProcessMemoryFraction = 1.0;
    private boolean throwOnCudamallocOom;

    private Builder() {}

    /** Sets {@code max_split_size} in bytes ({@link #UNLIMITED} for none). */
    public Builder maxSplitSizeBytes(long v) {
      maxSplitSizeBytes = v;
      return this;
    }

    /** Sets {@code max_non_split_rounding_size} in bytes. */
    public Builder maxNonSplitRoundingBytes(long v) {
      maxNonSplitRoundingBytes = v;
      return this;
    }

    /** Sets the 16 per-interval divisions. */
    public Builder roundupPower2Divisions(int[] v) {
      if (v.length != ROUNDUP_INTERVALS) {
        throw new IllegalArgumentException("expected " + ROUNDUP_INTERVALS + " divisions, got " + v.length);
      }
      divisions = v.clone();
      return this;
    }

    /** Sets the garbage-collection threshold. */
    public Builder garbageCollectionThreshold(double v) {
      garbageCollectionThreshold = v;
      return this;
    }

    /** Turns expandable segments on or off. */
    public Builder expandableSegments(boolean v) {
      expandableSegments = v;
      return this;
    }

    /** Sets the per-process memory fraction. */
    public Builder perProcessMemoryFraction(double v) {
      perProcessMemoryFraction = v;
      return this;
    }

    /** Records the source text for messages. */
    public Builder text(String v) {
      text = v;
      return this;
    }

    /** Returns the configuration. */
    public TorchAllocConf build() {
      return new TorchAllocConf(this);
    }
  }
}
