package kvsim.torch;

/**
 * Walks the opcode stream of a Python pickle (protocols 0 to 5) without executing it, and refuses
 * any pickle that could run code or reach objects outside plain data. Snapshot files come from
 * strangers; {@code pickle.load} of a crafted file runs arbitrary code, and even a Java unpickler
 * resolves classes on GLOBAL. The scan therefore happens before any unpickling.
 *
 * <ul>
 *   <li>Refused: {@code GLOBAL}, {@code STACK_GLOBAL}, {@code REDUCE}, {@code INST}, {@code OBJ},
 *       {@code NEWOBJ}, {@code NEWOBJ_EX}, {@code BUILD} (they import or call), and also {@code
 *       EXT1/2/4} (the extension registry resolves to globals) and {@code PERSID}/{@code BINPERSID}
 *       (persistent ids are resolved by the loader), plus the out-of-band buffer opcodes of
 *       protocol 5.
 *   <li>Every other opcode's argument is skipped by its exact length: fixed-width integers, length
 *       prefixed strings (1, 4 or 8 byte lengths) and newline-terminated text arguments.
 *   <li>The stream must end with {@code STOP}; an unknown opcode or a truncated argument is an
 *       error naming the byte offset.
 *   <li>Integers longer than a snapshot ever holds are refused (Note [Integer lengths]).
 * </ul>
 *
 * <p>Note [Integer lengths]: a snapshot's integers are addresses, sizes, times and stream handles,
 * all within 64 bits. The unpickler parses a text integer ({@code INT}, {@code LONG}) in time
 * quadratic in its digits (a million digits: 40 s) and a message quoting a {@code LONG4} of half a
 * megabyte spends seconds printing it, so a text integer of more than {@value #MAX_INTEGER_DIGITS}
 * characters and a {@code LONG4} of more than {@value #MAX_LONG4_BYTES} bytes are refused here.
 */
public final class PickleScanner {
  /** A pickle that may not be loaded, or is not a pickle at all. */
  public static final class Refused extends Exception {
    private static final long serialVersionUID = 1L;

    Refused(String message) {
      super(message);
    }
  }

  private PickleScanner() {}

  /** The longest text integer accepted (Note [Integer lengths]); 2^64 has 20 digits. */
  static final int MAX_INTEGER_DIGITS = 100;
  /** The longest LONG4 accepted, in bytes (Note [Integer lengths]); LONG1 holds up to 255. */
  static final int MAX_LONG4_BYTES = 255;

  // Argument kinds.
  private static final int NONE = 0;
  private static final int FIXED1 = 1;
  private static final int FIXED2 = 2;
  private static final int FIXED4 = 4;
  private static final int FIXED8 = 8;
  private static final int LEN1 = 11; // 1-byte length, then data
  private static final int LEN4 = 14; // 4-byte little-endian length, then data
  private static final int LEN8 = 18; // 8-byte little-endian length, then data
  private static final int LINE = 20; // up to and including '\n'
  private static final int FORBIDDEN = 99;
  private static final int UNKNOWN = -1;

  private static final int[] KIND = new int[256];
  private static final String[] NAME = new String[256];

  static {
    java.util.Arrays.fill(KIND, UNKNOWN);
    // protocol 0 and 1
    op('(', "MARK", NONE);
    op('.', "STOP", NONE);
    op('0', "POP", NONE);
    op('1', "POP_MARK", NONE);
    op('2', "DUP", NONE);
    op('F', "FLOAT", LINE);
    op('I', "INT", LINE);
    op('J', "BININT", FIXED4);
    op('K', "BININT1", FIXED1);
    op('L', "LONG", LINE);
    op('M', "BININT2", FIXED2);
    op('N', "NONE", NONE);
    op('P', "PERSID", FORBIDDEN);
    op('Q', "BINPERSID", FORBIDDEN);
    op('R', "REDUCE", FORBIDDEN);
    op('S', "STRING", LINE);
    op('T', "BINSTRING", LEN4);
    op('U', "SHORT_BINSTRING", LEN1);
    op('V', "UNICODE", LINE);
    op('X', "BINUNICODE", LEN4);
    op('a', "APPEND", NONE);
    op('b', "BUILD", FORBIDDEN);
    op('c', "GLOBAL", FORBIDDEN);
    op('d', "DICT", NONE);
    op('}', "EMPTY_DICT", NONE);
    op('e', "APPENDS", NONE);
    op('g', "GET", LINE);
    op('h', "BINGET", FIXED1);
    op('i', "INST", FORBIDDEN);
    op('j', "LONG_BINGET", FIXED4);
    op('l', "LIST", NONE);
    op(']', "EMPTY_LIST", NONE);
    op('o', "OBJ", FORBIDDEN);
    op('p', "PUT", LINE);
    op('q', "BINPUT", FIXED1);
    op('r', "LONG_BINPUT", FIXED4);
    op('s', "SETITEM", NONE);
    op('t', "TUPLE", NONE);
    op(')', "EMPTY_TUPLE", NONE);
    op('u', "SETITEMS", NONE);
    op('G', "BINFLOAT", FIXED8);
    // protocol 2
    op(0x80, "PROTO", FIXED1);
    op(0x81, "NEWOBJ", FORBIDDEN);
    op(0x82, "EXT1", FORBIDDEN);
    op(0x83, "EXT2", FORBIDDEN);
    op(0x84, "EXT4", FORBIDDEN);
    op(0x85, "TUPLE1", NONE);
    op(0x86, "TUPLE2", NONE);
    op(0x87, "TUPLE3", NONE);
    op(0x88, "NEWTRUE", NONE);
    op(0x89, "NEWFALSE", NONE);
    op(0x8a, "LONG1", LEN1);
    op(0x8b, "LONG4", LEN4);
    // protocol 3
    op('B', "BINBYTES", LEN4);
    op('C', "SHORT_BINBYTES", LEN1);
    // protocol 4
    op(0x8c, "SHORT_BINUNICODE", LEN1);
    op(0x8d, "BINUNICODE8", LEN8);
    op(0x8e, "BINBYTES8", LEN8);
    op(0x8f, "EMPTY_SET", NONE);
    op(0x90, "ADDITEMS", NONE);
    op(0x91, "FROZENSET", NONE);
    op(0x92, "NEWOBJ_EX", FORBIDDEN);
    op(0x93, "STACK_GLOBAL", FORBIDDEN);
    op(0x94, "MEMOIZE", NONE);
    op(0x95, "FRAME", FIXED8);
    // protocol 5
    op(0x96, "BYTEARRAY8", LEN8);
    op(0x97, "NEXT_BUFFER", FORBIDDEN);
    op(0x98, "READONLY_BUFFER", FORBIDDEN);
  }

  private static void op(int code, String name, int kind) {
    KIND[code] = kind;
    NAME[code] = name;
  }

  /** Returns the opcode's name, or null for a byte that is no opcode. */
  public static String opcodeName(int code) {
    return NAME[code & 0xff];
  }

  /**
   * Checks a whole pickle; returns the number of opcodes up to and including STOP, or throws
   * {@link Refused} with a one-line reason.
   */
  public static long scan(byte[] data) throws Refused {
    int pos = 0;
    long ops = 0;
    while (pos < data.length) {
      int code = data[pos] & 0xff;
      int at = pos;
      pos++;
      ops++;
      int kind = KIND[code];
      switch (kind) {
        case UNKNOWN -> throw new Refused(String.format("not a pickle: unknown opcode 0x%02x at byte %d", code, at));
        case FORBIDDEN -> throw new Refused(
            "refused: opcode " + NAME[code] + " at byte " + at
                + " can import or call Python objects; snapshot files hold only plain data (dicts, lists, tuples, strings, numbers)");
        case NONE -> {
          if (code == '.') {
            return ops;
          }
        }
        case FIXED1, FIXED2, FIXED4, FIXED8 -> pos = need(data, pos, kind, at, code);
        case LEN1 -> {
          pos = need(data, pos, 1, at, code);
          pos = need(data, pos, data[pos - 1] & 0xff, at, code);
        }
        case LEN4 -> {
          pos = need(data, pos, 4, at, code);
          long len = littleEndian(data, pos - 4, 4);
          if (code == 'X' || code == 'B') {
            len &= 0xffffffffL; // BINUNICODE and BINBYTES lengths are unsigned
          }
          if (code == 0x8b && len > MAX_LONG4_BYTES) {
            throw new Refused("refused: LONG4 at byte " + at + " holds an integer of " + len + " bytes; snapshot files hold 64-bit integers");
          }
          pos = need(data, pos, len, at, code);
        }
        case LEN8 -> {
          pos = need(data, pos, 8, at, code);
          long len = littleEndian(data, pos - 8, 8);
          if (len < 0) {
            throw new Refused("malformed pickle: negative length at byte " + at);
          }
          pos = need(data, pos, len, at, code);
        }
        case LINE -> {
          int end = line(data, pos, at, code);
          if ((code == 'I' || code == 'L') && end - 1 - pos > MAX_INTEGER_DIGITS) {
            throw new Refused("refused: " + NAME[code] + " at byte " + at + " holds an integer of " + (end - 1 - pos)
                + " characters; snapshot files hold 64-bit integers");
          }
          pos = end;
        }
        default -> throw new IllegalStateException("opcode table broken at " + code);
      }
    }
    throw new Refused("malformed pickle: no STOP opcode before the end of the file (truncated?)");
  }

  private static int need(byte[] data, int pos, long len, int at, int code) throws Refused {
    if (len < 0 || pos + len > data.length) {
      throw new Refused("malformed pickle: " + NAME[code] + " at byte " + at + " runs past the end of the file");
    }
    return (int) (pos + len);
  }

  private static int line(byte[] data, int pos, int at, int code) throws Refused {
    for (int i = pos; i < data.length; i++) {
      if (data[i] == '\n') {
        return i + 1;
      }
    }
    throw new Refused("malformed pickle: " + NAME[code] + " at byte " + at + " has no end of line");
  }

  private static long littleEndian(byte[] data, int pos, int bytes) {
    long v = 0;
    for (int i = bytes - 1; i >= 0; i--) {
      v = (v << 8) | (data[pos + i] & 0xffL);
    }
    if (bytes == 4) {
      v = (int) v; // signed 32-bit, as pickle's int4
    }
    return v;
  }
}
