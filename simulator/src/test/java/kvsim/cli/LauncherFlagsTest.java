package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The launcher's choice of the JIT's first tier (Note [Flags per command] in {@code kvsim}) and of
 * the resident server (Note [Resident server]): the real script, copied beside a jar that is up to
 * date, runs a stand-in {@code java} that prints the arguments it was given (and, started as the
 * server's client, exits with the status the test asks for), so each case shows exactly what the
 * JVMs would be started with; a stand-in {@code perl} does the same for the launcher's Perl client
 * (Note [A client without a JVM]).
 */
class LauncherFlagsTest {
  private static final String FIRST_TIER = "-XX:TieredStopAtLevel=1";
  private static final String SERIAL_GC = "-XX:+UseSerialGC";
  private static final String HUGE_PAGES = "-XX:+UseTransparentHugePages";

  @TempDir Path root;
  private Path jdk;
  /** KVSIM_SERVER_CLIENT for the launcher (null: unset); "java" unless a test is about the Perl client. */
  private String serverClient = "java";
  /** A folder put first on the launcher's PATH, or null. */
  private Path pathFirst;

  @BeforeEach
  void launcherBesideAnUpToDateJar() throws IOException {
    Path launcher = Path.of("..", "kvsim");
    assumeTrue(Files.isRegularFile(launcher), "the launcher is beside simulator/");
    Files.copy(launcher, root.resolve("kvsim"));
    Files.createDirectories(root.resolve("simulator/target"));
    Path jar = Files.writeString(root.resolve("simulator/target/kvsim.jar"), "");
    Files.writeString(root.resolve("pom.xml"), "");
    Files.writeString(root.resolve("simulator/pom.xml"), "");
    FileTime old = FileTime.fromMillis(System.currentTimeMillis() - 3_600_000);
    Files.setLastModifiedTime(root.resolve("pom.xml"), old);
    Files.setLastModifiedTime(root.resolve("simulator/pom.xml"), old);
    Files.setLastModifiedTime(jar, FileTime.fromMillis(System.currentTimeMillis()));
    // A JDK 25 whose java prints its arguments, one a line, and writes no start-up cache.
    jdk = root.resolve("jdk");
    Files.createDirectories(jdk.resolve("bin"));
    Files.writeString(jdk.resolve("release"), "JAVA_VERSION=\"25.0.3\"\n");
    Path java = Files.writeString(jdk.resolve("bin/java"), "#!/usr/bin/env bash\nprintf '%s\\n' \"$@\"\n"
        + "if [[ \" $* \" == *' kvsim.cli.ServerClient '* ]]; then exit ${CLIENT_STATUS:-99}; fi\n");
    Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
  }

  /** Returns the arguments the launcher starts java with for {@code args}. */
  private List<String> javaArgs(String... args) throws Exception {
    Launched launched = launch(ServerClient.NO_SERVER, args);
    List<String> lines = launched.lines();
    assertEquals(0, launched.status(), lines.toString());
    assertTrue(lines.contains("-jar"), lines.toString());
    assertFalse(lines.contains("kvsim.cli.ServerClient"), "no server, no client: " + lines);
    return lines;
  }

  /** Runs the launcher with {@code args} and a stand-in client exiting {@code clientStatus}; returns its status and output. */
  private Launched launch(int clientStatus, String... args) throws Exception {
    return launchWith(null, clientStatus, args);
  }

  /** As {@link #launch}, under {@code KVSIM_JAVA_OPTS=opts} (null: unset). */
  private Launched launchWith(String opts, int clientStatus, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of("bash", root.resolve("kvsim").toString()));
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command).directory(root.toFile()).redirectErrorStream(true);
    pb.environment().put("KVSIM_JAVA_HOME", jdk.toString());
    if (opts == null) {
      pb.environment().remove("KVSIM_JAVA_OPTS");
    } else {
      pb.environment().put("KVSIM_JAVA_OPTS", opts);
    }
    pb.environment().remove("KVSIM_NO_CDS");
    pb.environment().remove("KVSIM_DEBUG");
    pb.environment().put("XDG_RUNTIME_DIR", root.resolve("run").toString());
    pb.environment().put("CLIENT_STATUS", Integer.toString(clientStatus));
    if (serverClient == null) {
      pb.environment().remove("KVSIM_SERVER_CLIENT");
    } else {
      pb.environment().put("KVSIM_SERVER_CLIENT", serverClient);
    }
    if (pathFirst != null) {
      pb.environment().put("PATH", pathFirst + ":" + System.getenv("PATH"));
    }
    Process p = pb.start();
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "launcher timed out");
    return new Launched(p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().toList());
  }

  private record Launched(int status, List<String> lines) {}

  private static String last(List<String> lines) {
    return lines.isEmpty() ? "" : lines.get(lines.size() - 1);
  }

  /** Makes the socket a server for the launcher's folder would listen on (a file of socket type, nobody behind it). */
  private Path serverSocket() throws Exception {
    // its name: FNV-1a (32 bits) of the folder's physical path
    long key = 2166136261L;
    for (byte b : root.toRealPath().toString().getBytes(StandardCharsets.UTF_8)) {
      key = ((key ^ (b & 0xff)) * 16777619L) & 0xffffffffL;
    }
    Path dir = Files.createDirectories(root.resolve("run/kvsim-server-" + Files.getAttribute(root, "unix:uid")));
    Path socket = dir.resolve(key + ".sock");
    try (java.nio.channels.ServerSocketChannel s = java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
      s.bind(java.net.UnixDomainSocketAddress.of(socket));
    }
    return socket;
  }

  @Test
  void withAServerForTheFolderCommandsGoThroughItsClient() throws Exception {
    Path socket = serverSocket();
    // without the client's class (a jar without its build folder) the command runs here
    Launched noClient = launch(0, "--version");
    assertFalse(noClient.lines().contains("kvsim.cli.ServerClient"), noClient.lines().toString());
    Path classes = Files.createDirectories(root.resolve("simulator/target/classes/kvsim/cli"));
    Files.writeString(classes.resolve("ServerClient.class"), "");
    Launched served = launch(0, "serving", "requests:preset=sharegpt,count=10", "--system", "vllm");
    assertEquals(0, served.status(), served.lines().toString());
    List<String> lines = served.lines();
    int client = lines.indexOf("kvsim.cli.ServerClient");
    assertTrue(client > 0 && lines.contains("-XX:TieredStopAtLevel=1"), lines.toString());
    assertEquals(socket.toString(), lines.get(client + 1));
    assertTrue(lines.get(client + 2).startsWith(root.resolve("simulator/target/kvsim.jar").toString() + " "), lines.get(client + 2)); // the build
    assertEquals("opts=-Xmx4g debug=", lines.get(client + 3)); // the settings
    assertEquals(List.of("run", "serving", "requests:preset=sharegpt,count=10", "--system", "vllm"), lines.subList(client + 4, lines.size()));
    assertFalse(lines.contains("-jar"), "served: not run again here");
    // The command's own status comes back; a refusal (99) runs it here instead.
    assertEquals(2, launch(2, "replay", "churn:ops=-1").status());
    Launched refused = launch(ServerClient.NO_SERVER, "--version");
    assertEquals(0, refused.status());
    assertTrue(refused.lines().contains("kvsim.cli.ServerClient") && refused.lines().contains("-jar"), refused.lines().toString());
  }

  /** Note [A client without a JVM]: where perl is on the PATH, the client is the launcher's Perl program, build folder or not. */
  @Test
  void withPerlTheClientIsThePerlProgram() throws Exception {
    Path socket = serverSocket();
    pathFirst = Files.createDirectories(root.resolve("bin"));
    Path perl = Files.writeString(pathFirst.resolve("perl"), "#!/usr/bin/env bash\nwhile [[ $1 != -- ]]; do shift; done\nshift\n"
        + "echo perl-client\nprintf '%s\\n' \"$@\"\nexit ${CLIENT_STATUS:-99}\n");
    Files.setPosixFilePermissions(perl, PosixFilePermissions.fromString("rwxr-xr-x"));
    serverClient = null;
    Launched served = launch(0, "replay", "churn:ops=1000", "--seeds", "1..200");
    List<String> lines = served.lines();
    assertEquals(0, served.status(), lines.toString());
    int client = lines.indexOf("perl-client");
    assertEquals(0, client, lines.toString());
    assertEquals(socket.toString(), lines.get(1));
    assertTrue(lines.get(2).startsWith(root.resolve("simulator/target/kvsim.jar").toString() + " "), lines.get(2)); // the build
    assertEquals("opts=-Xmx4g debug=", lines.get(3)); // the settings
    assertEquals(root.toRealPath().toString(), lines.get(4)); // the folder
    assertEquals(List.of("run", "replay", "churn:ops=1000", "--seeds", "1..200"), lines.subList(5, lines.size()));
    assertEquals(3, launch(3, "--version").status());
    // refused: run here
    Launched refused = launch(ServerClient.NO_SERVER, "--version");
    assertTrue(refused.lines().contains("perl-client") && refused.lines().contains("-jar"), refused.lines().toString());
    // KVSIM_SERVER_CLIENT=java picks the Java client, which needs the build folder
    serverClient = "java";
    assertFalse(launch(0, "--version").lines().contains("perl-client"));
  }

  @Test
  void serverSubcommandsAnswerAndCheckTheirArguments() throws Exception {
    Launched status = launch(99, "server", "status");
    assertEquals(1, status.status());
    assertTrue(last(status.lines()).startsWith("kvsim server: none is serving "), status.lines().toString());
    Launched stop = launch(99, "server", "stop");
    assertEquals(0, stop.status(), "stopping none is no error");
    Launched help = launch(99, "server", "--help");
    assertEquals(0, help.status());
    assertTrue(help.lines().get(0).startsWith("usage: kvsim server start"), help.lines().toString());
    for (String[] bad : List.of(new String[] {"server"}, new String[] {"server", "restart"}, new String[] {"server", "start", "--idle-minutes", "0"},
        new String[] {"server", "status", "extra"})) {
      Launched l = launch(99, bad);
      assertEquals(2, l.status(), String.join(" ", bad));
      assertTrue(last(l.lines()).startsWith("kvsim: error: usage: kvsim server"), l.lines().toString());
    }
  }

  private void assertFirstTier(boolean expected, String... args) throws Exception {
    // Note [A collector per run]: what is not known to be short runs with the serial collector
    assertTiers(expected, !expected, args);
  }

  /** As {@link #assertFirstTier}, for the short runs that keep the serial collector (Note [Flags per command]). */
  private void assertFirstTierKeepingTheSerialCollector(boolean expected, String... args) throws Exception {
    assertTiers(expected, true, args);
  }

  private void assertTiers(boolean firstTier, boolean serialGc, String... args) throws Exception {
    List<String> java = javaArgs(args);
    assertEquals(firstTier, java.contains(FIRST_TIER), String.join(" ", args) + " -> " + java);
    assertEquals(serialGc, java.contains(SERIAL_GC), String.join(" ", args) + " -> " + java);
    // The command's own arguments come after the jar, unchanged.
    int jar = java.indexOf("-jar");
    assertEquals(List.of(args), java.subList(jar + 2, java.size()));
  }

  @Test
  void versionHelpAndListRunOnTheFirstTier() throws Exception {
    assertFirstTier(true, "--version");
    assertFirstTier(true, "-V");
    assertFirstTier(true, "--help");
    assertFirstTier(true, "list");
  }

  /** The launcher's count of the allocators a replay without -a runs is the registry's. */
  @Test
  void theLaunchersAllocatorCountIsTheRegistrys() throws IOException {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("every_allocator=(\\d+)").matcher(Files.readString(root.resolve("kvsim")));
    assertTrue(m.find(), "the launcher counts every allocator");
    assertEquals(kvsim.registry.AllocatorRegistry.names().size(), Integer.parseInt(m.group(1)));
  }

  @Test
  void reportsRunOnTheFirstTier() throws Exception {
    assertFirstTierKeepingTheSerialCollector(true, "report", "results/runs/a");
    assertFirstTierKeepingTheSerialCollector(true, "report", "a", "b", "--redraw-charts", "-o", "r.html");
  }

  @Test
  void compareOnItsOwnWorkloadRunsOnTheFirstTier() throws Exception {
    assertFirstTierKeepingTheSerialCollector(true, "compare");
    assertFirstTierKeepingTheSerialCollector(true, "compare", "-o", "x", "--quiet", "--no-report");
    assertFirstTierKeepingTheSerialCollector(true, "compare", "churn:ops=1000", "-a", "first-fit,slab");
    assertFirstTierKeepingTheSerialCollector(false, "compare", "churn:ops=1000000");
    assertFirstTierKeepingTheSerialCollector(false, "compare", "workload.yaml");
    assertFirstTierKeepingTheSerialCollector(false, "compare", "--set", "buddy.min-block=4MiB");
    assertFirstTierKeepingTheSerialCollector(false, "compare", "--check");
  }

  @Test
  void servingRunsOfAtMost30000GeneratedRequestsRunOnTheFirstTier() throws Exception {
    assertFirstTierKeepingTheSerialCollector(true, "serving", "requests:preset=sharegpt,count=10", "--system", "vllm");
    assertFirstTierKeepingTheSerialCollector(true, "serving", "requests:preset=azure-conv,count=20000", "--system", "vllm", "-q", "-o", "x");
    assertFirstTierKeepingTheSerialCollector(true, "serving", "requests"); // 1,000 requests through vllm
    assertFirstTierKeepingTheSerialCollector(true, "serving", "requests", "--seeds", "1..30", "--no-report", "--device", "a100-80", "--model=opt-13b");
    assertFirstTierKeepingTheSerialCollector(true, "serving", "requests:count=10000", "--system", "vllm", "--system=orca-max,vattention");
    assertFirstTierKeepingTheSerialCollector(true, "serving", "requests:count=30000", "--seed", "3", "--force", "--output=x");
    assertFirstTierKeepingTheSerialCollector(false, "serving", "requests", "--seeds", "1..31"); // 31,000 requests
    assertFirstTierKeepingTheSerialCollector(false, "serving", "requests:count=10000", "--system", "vllm,orca-max", "--system=vattention,hf-naive");
    assertFirstTierKeepingTheSerialCollector(false, "serving", "requests:count=30001");
    assertFirstTierKeepingTheSerialCollector(false, "serving", "requests:count=1e5");
    assertFirstTierKeepingTheSerialCollector(false, "serving", "requests:count=10", "--set", "max-num-seqs=8,16");
    assertFirstTierKeepingTheSerialCollector(false, "serving", "requests:count=10", "--check");
    assertFirstTierKeepingTheSerialCollector(false, "serving", "trace.jsonl");
    assertFirstTierKeepingTheSerialCollector(false, "serving", "azure:week.csv,speedup=0.25", "--system", "vllm");
  }

  @Test
  void blockScriptsUpTo16MiBRunOnTheFirstTier() throws Exception {
    Path small = Files.writeString(root.resolve("small.jsonl"), "{\"op\":\"config\"}\n");
    Path large = root.resolve("large.jsonl");
    try (RandomAccessFile f = new RandomAccessFile(large.toFile(), "rw")) {
      f.setLength(16L * 1024 * 1024 + 1);
    }
    Path exact = root.resolve("exact.jsonl");
    try (RandomAccessFile f = new RandomAccessFile(exact.toFile(), "rw")) {
      f.setLength(16L * 1024 * 1024);
    }
    assertFirstTier(true, "blocks", small.toString());
    assertFirstTier(true, "blocks", exact.toString());
    assertFirstTier(true, "blocks", "-o", root.resolve("out.jsonl").toString(), "--check", small.toString());
    assertFirstTier(true, "blocks", "--output", large.toString(), small.toString()); // the option's value is not the script
    assertFirstTier(false, "blocks", large.toString());
    assertFirstTier(false, "blocks", root.resolve("missing.jsonl").toString());
  }

  @Test
  void churnReplaysOfAtMostTwoMillionOperationsRunOnTheFirstTier() throws Exception {
    assertFirstTier(true, "replay", "churn:ops=1000", "--seeds", "1..200", "-a", "first-fit", "--quiet");
    assertFirstTier(true, "replay", "churn:ops=5000", "--seeds", "1..200", "-a", "first-fit", "--quiet", "-o", "x");
    assertFirstTier(true, "replay", "churn", "--seeds=1..400", "-a", "first-fit");
    assertFirstTier(true, "replay", "churn:ops=1000", "--seeds", "1..100", "-a", "first-fit", "--allocator=slab,paged,buddy"); // 400,000 x 4
    assertFirstTier(true, "replay", "churn:ops=1000", "--seeds", "1..200"); // every allocator: 1,800,000
    assertFirstTier(false, "replay", "churn:ops=1000000"); // every allocator: 9,000,000
    assertFirstTier(false, "replay", "churn", "--seeds", "1..201", "-a", "first-fit,slab");
    assertFirstTier(true, "replay", "churn:ops=1000000,max-size-mib=8", "-a", "first-fit");
    assertFirstTier(true, "replay", "churn:seed=3,ops=2000", "--seeds", "1,2,3");
    assertFirstTier(false, "replay", "churn", "--seeds", "1..401", "-a", "first-fit"); // 2,005,000 operations
    assertFirstTier(false, "replay", "churn:ops=10000000,max-size-mib=8", "-a", "first-fit");
    assertFirstTier(false, "replay", "trace.jsonl", "-a", "first-fit");
    assertFirstTier(false, "replay", "churn", "trace.jsonl");
    assertFirstTier(false, "replay", "churn", "--set", "buddy.min-block=4MiB");
    assertFirstTier(false, "replay", "churn:ops=99999999999");
    assertFirstTier(false, "replay", "churn", "--seeds", "seeds.txt");
  }

  @Test
  void kvtReplaysOfAtMost16MiBTimesTheirAllocatorsRunOnTheFirstTier() throws Exception {
    Path small = Files.writeString(root.resolve("small.kvt"), "not read by the launcher");
    Path nine = root.resolve("nine.kvt");
    try (RandomAccessFile f = new RandomAccessFile(nine.toFile(), "rw")) {
      f.setLength(9L * 1024 * 1024);
    }
    Path large = root.resolve("large.kvt");
    try (RandomAccessFile f = new RandomAccessFile(large.toFile(), "rw")) {
      f.setLength(16L * 1024 * 1024 + 1);
    }
    assertFirstTierKeepingTheSerialCollector(true, "replay", small.toString(), "-a", "first-fit", "--quiet", "--no-report", "-o", "x");
    assertFirstTierKeepingTheSerialCollector(true, "replay", nine.toString(), "--allocator=first-fit");
    assertFirstTierKeepingTheSerialCollector(false, "replay", nine.toString(), "-a", "first-fit,slab"); // 18 MiB
    assertFirstTierKeepingTheSerialCollector(false, "replay", nine.toString(), "-a", "first-fit", "-a", "slab");
    assertFirstTierKeepingTheSerialCollector(false, "replay", large.toString(), "-a", "first-fit");
    assertFirstTierKeepingTheSerialCollector(true, "replay", small.toString()); // every allocator, a few bytes each
    Path two = root.resolve("two.kvt");
    try (RandomAccessFile f = new RandomAccessFile(two.toFile(), "rw")) {
      f.setLength(2L * 1024 * 1024);
    }
    assertFirstTierKeepingTheSerialCollector(false, "replay", two.toString()); // every allocator: 18 MiB
    assertFirstTierKeepingTheSerialCollector(false, "replay", root.resolve("missing.kvt").toString(), "-a", "first-fit");
    assertFirstTierKeepingTheSerialCollector(false, "replay", small.toString(), "-a", "first-fit", "--set", "slab.x=1");
    assertFirstTierKeepingTheSerialCollector(false, "replay", small.toString(), "churn:ops=10", "-a", "first-fit");
  }

  /** Returns the arguments java is started with for {@code args} under {@code KVSIM_JAVA_OPTS=opts}. */
  private List<String> javaArgsWithOptions(String opts, String... args) throws Exception {
    return launchWith(opts, ServerClient.NO_SERVER, args).lines();
  }

  @Test
  void aCollectorNamedInTheJavaOptionsIsTheOnlyOne() throws Exception {
    String[] serving = {"serving", "requests:preset=sharegpt,count=10", "--system", "vllm"};
    assertTrue(javaArgsWithOptions("-Xmx1g", serving).contains(SERIAL_GC));
    for (String gc : List.of("-XX:+UseG1GC", "-XX:+UseParallelGC", "-XX:+UseZGC")) {
      List<String> java = javaArgsWithOptions("-Xmx1g " + gc, serving);
      assertTrue(java.contains(gc) && !java.contains(SERIAL_GC), java.toString());
    }
  }

  /** Note [Huge pages where the kernel offers them]: asked for exactly where this machine's kernel gives them on request, before the options. */
  @Test
  void hugePagesAreAskedForWhereTheKernelGivesThemOnRequest() throws Exception {
    Path setting = Path.of("/sys/kernel/mm/transparent_hugepage/enabled");
    boolean onRequest = Files.isReadable(setting) && Files.readString(setting).contains("[madvise]");
    for (String[] args : List.of(new String[] {"--version"}, new String[] {"serving", "requests:preset=sharegpt,count=10", "--system", "vllm"})) {
      List<String> java = javaArgs(args);
      assertEquals(onRequest, java.contains(HUGE_PAGES), setting + " " + (onRequest ? "on request" : "not on request") + ": " + java);
    }
    List<String> undone = javaArgsWithOptions("-Xmx1g -XX:-UseTransparentHugePages", "--version");
    assertTrue(!onRequest || undone.indexOf(HUGE_PAGES) < undone.indexOf("-XX:-UseTransparentHugePages"), undone.toString());
  }

  @Test
  void javaOptionsComeAfterTheChoiceSoTheyCanUndoIt() throws Exception {
    List<String> java = javaArgsWithOptions("-Xmx1g -XX:TieredStopAtLevel=4", "--version");
    assertTrue(java.indexOf(FIRST_TIER) >= 0 && java.indexOf(FIRST_TIER) < java.indexOf("-XX:TieredStopAtLevel=4"), java.toString());
    assertFalse(java.contains("-Xmx4g"), java.toString());
  }
}
