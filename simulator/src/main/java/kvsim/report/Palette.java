package kvsim.report;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Stroke;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The colours of kvsim's charts: one colour per allocator or serving system name, the same in every
 * chart and report, and fixed colours for the categories charts share (the KV memory's uses).
 * Colour-blind-safe: Okabe and Ito's eight colours (Okabe &amp; Ito, "Color Universal Design", 2008),
 * then Paul Tol's "muted" scheme (Tol, "Colour Schemes", SRON/EPS/TN/09-002).
 *
 * <p>Note [One colour per name]: a name's colour is its place in {@link #NAMES}, the registry order
 * of the allocators, then of the serving systems not already named ({@code PaletteTest} checks the
 * list against both registries; {@code report} may not use the registry package). Within one chart
 * no two series share a colour: {@link #styles} gives each series its name's colour unless an
 * earlier series of the chart holds it (the same allocator of two runs, or a name kvsim does not
 * know), then the first colour no series of the chart holds; only a chart with more series than
 * colours reuses them, and then with a dash pattern no earlier series of that colour has. A series
 * label {@code "run: name"} (a multi-folder report) takes the colour of its name.
 */
public final class Palette {
  /** The series colours, in order: Okabe-Ito, then Tol's muted; the least contrasting on white last. */
  static final List<Color> COLOURS = List.of(
      new Color(0x0072B2), new Color(0xE69F00), new Color(0x009E73), new Color(0xD55E00), new Color(0xCC79A7), new Color(0x56B4E9),
      new Color(0x000000), new Color(0x332288), new Color(0x117733), new Color(0x882255), new Color(0x44AA99), new Color(0x999933),
      new Color(0xAA4499), new Color(0xCC6677), new Color(0x88CCEE), new Color(0xDDCC77), new Color(0xF0E442));

  /**
   * Allocator names in the allocator registry's order, then serving system names in the system
   * table's order (those not already listed): the index of a name is its colour's.
   */
  static final List<String> NAMES = List.of("first-fit", "best-fit", "buddy", "slab", "multi-slab", "paged", "pytorch-caching", "vattention",
      "stitching", "vllm", "vllm-v0", "orca-max", "orca-pow2", "orca-oracle", "hf-naive");

  /** Dash patterns of a colour's second, third, ... use in one chart (the first is solid). */
  private static final float[][] DASHES = {null, {8f, 4f}, {2f, 3f}, {10f, 3f, 2f, 3f}, {4f, 4f}};

  /** The fixed colours of the KV memory's uses (the vLLM paper's Fig. 2 categories) and of idle memory. */
  static final Color TOKEN_STATES = new Color(0x009E73);
  static final Color RESERVED_FUTURE = new Color(0x56B4E9);
  static final Color INTERNAL_FRAGMENTATION = new Color(0xE69F00);
  static final Color EXTERNAL_FRAGMENTATION = new Color(0xD55E00);
  static final Color IDLE = new Color(0xDDDDDD);

  private Palette() {}

  /**
   * How one series is drawn.
   *
   * @param colour its colour
   * @param dash its dash index: 0 solid, else the {@code dash}-th reuse of the colour in the chart
   */
  public record Style(Color colour, int dash) {
    /** Returns the series' line of width {@code width}: solid, or its dash pattern. */
    public Stroke stroke(float width) {
      float[] d = DASHES[dash % DASHES.length];
      return d == null ? new BasicStroke(width) : new BasicStroke(width, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, d, 0f);
    }

    /** Returns the colour as {@code #rrggbb}. */
    public String hex() {
      return hex(colour);
    }

    static String hex(Color c) {
      return String.format(Locale.ROOT, "#%06x", c.getRGB() & 0xFFFFFF);
    }
  }

  /** Returns the place of {@code label}'s name in {@link #NAMES} ({@code "run: name"} counts as {@code name}), or -1. */
  static int indexOf(String label) {
    int colon = label.lastIndexOf(": ");
    String name = colon < 0 ? label : label.substring(colon + 2);
    int space = name.indexOf(' ');
    int i = NAMES.indexOf(name);
    // "first-fit (whole run)", "vllm allocated": the name before the first space.
    return i >= 0 || space < 0 ? i : NAMES.indexOf(name.substring(0, space));
  }

  /** Returns the colour of the name {@code label} alone (no other series considered). */
  public static Color colourOf(String label) {
    return styles(List.of(label)).get(0).colour();
  }

  /** Gives {@code renderer}'s series, in order, the styles of {@code labels} (lines {@code width} wide). */
  static void apply(org.jfree.chart.renderer.AbstractRenderer renderer, List<String> labels, float width) {
    List<Style> styles = styles(labels);
    for (int i = 0; i < styles.size(); i++) {
      renderer.setSeriesPaint(i, styles.get(i).colour());
      renderer.setSeriesStroke(i, styles.get(i).stroke(width));
    }
  }

  /** Returns the styles of one chart's series, in order (Note [One colour per name]). */
  public static List<Style> styles(List<String> labels) {
    int n = COLOURS.size();
    int[] slots = new int[labels.size()];
    boolean[] claimed = new boolean[n];
    // First pass: each name's first series takes its own colour.
    for (int k = 0; k < labels.size(); k++) {
      int i = indexOf(labels.get(k));
      slots[k] = -1;
      if (i >= 0 && !claimed[i % n]) {
        claimed[i % n] = true;
        slots[k] = i % n;
      }
    }
    // Second pass, in order: the rest take the least used colour, one no name of the chart claims first.
    int[] uses = new int[n];
    for (int s : slots) {
      if (s >= 0) {
        uses[s]++;
      }
    }
    List<Style> out = new ArrayList<>();
    int[] drawn = new int[n];
    for (int k = 0; k < labels.size(); k++) {
      int slot = slots[k];
      if (slot < 0) {
        int min = Integer.MAX_VALUE;
        for (int u : uses) {
          min = Math.min(min, u);
        }
        for (int c = 0; c < n && slot < 0; c++) {
          if (uses[c] == min && !claimed[c]) {
            slot = c;
          }
        }
        for (int c = 0; c < n && slot < 0; c++) {
          if (uses[c] == min) {
            slot = c;
          }
        }
        uses[slot]++;
      }
      out.add(new Style(COLOURS.get(slot), drawn[slot]++));
    }
    return out;
  }
}
