package kvsim.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The resident server (Note [Resident server] on {@link Server}), each side in a JVM of its own as
 * the launcher runs them: commands served give the same exit status, standard output, standard
 * error and result files, byte for byte, as the same commands run directly; requests of another
 * build, settings or folder are refused; a client that leaves during its command stops the server
 * and leaves no temporaries. The launcher's Perl client (Note [A client without a JVM] in {@code
 * kvsim}) gives what the Java client gives, byte for byte.
 */
class ServerTest {
  private static final String BUILD = "test-build";
  private static final String SETTINGS = "test-settings";
  private static Path dir;
  private static Process server;
  private static Path socket;

  @BeforeAll
  static void startServer() throws Exception {
    // A short folder of its own: a Unix socket's path may not exceed about 100 bytes.
    dir = Files.createTempDirectory(Path.of(System.getProperty("java.io.tmpdir")), "kvsrv");
    socket = dir.resolve("s.sock");
    server = startServer(socket, BUILD);
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (server != null && server.isAlive()) {
      ServerClient.request(socket, identity(), "stop", new String[0], new ByteArrayOutputStream(), new ByteArrayOutputStream());
      assertTrue(server.waitFor(30, TimeUnit.SECONDS), "the server stops when asked");
    }
    deleteTree(dir);
  }

  /** Starts a server without warm-up in this JVM's folder and waits until it answers. */
  private static Process startServer(Path socket, String build) throws Exception {
    Process p = new ProcessBuilder(java(), "-Xmx1g", "-Djava.awt.headless=true", "-cp", System.getProperty("java.class.path"),
        "kvsim.cli.Server", socket.toString(), build, SETTINGS, "5", "--no-warm-up")
        .redirectErrorStream(true).redirectOutput(socket.resolveSibling(socket.getFileName() + ".log").toFile()).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (System.nanoTime() < deadline) {
      if (Files.exists(socket)
          && ServerClient.request(socket, new ServerClient.Identity(build, SETTINGS, folder()), "status", new String[0],
              new ByteArrayOutputStream(), new ByteArrayOutputStream()) == 0) {
        return p;
      }
      assertTrue(p.isAlive(), () -> "the server exited: " + log(socket));
      Thread.sleep(50);
    }
    throw new AssertionError("the server did not answer within 60 s: " + log(socket));
  }

  private static String log(Path socket) {
    try {
      return Files.readString(socket.resolveSibling(socket.getFileName() + ".log"));
    } catch (IOException e) {
      return "(no log)";
    }
  }

  private static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  private static String folder() {
    return Path.of("").toAbsolutePath().toString();
  }

  private static ServerClient.Identity identity() {
    return new ServerClient.Identity(BUILD, SETTINGS, folder());
  }

  /** A command's outcome: status, the bytes of its two streams, and the files it wrote under its folder. */
  private record Outcome(int status, String out, String err, TreeMap<String, String> files) {}

  private static Outcome direct(Path output, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of(java(), "-Xmx1g", "-Djava.awt.headless=true", "-cp", System.getProperty("java.class.path"), "kvsim.cli.KvSim"));
    command.addAll(List.of(args));
    Path out = dir.resolve("direct.out");
    Path err = dir.resolve("direct.err");
    Process p = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "direct run timed out");
    return new Outcome(p.exitValue(), Files.readString(out), Files.readString(err), files(output));
  }

  private static Outcome served(Path output, String... args) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status = ServerClient.request(socket, identity(), "run", args, out, err);
    return new Outcome(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8), files(output));
  }

  /** Every file under {@code output} but the wall-clock timings, with its bytes (as Latin-1 text), by relative path. */
  private static TreeMap<String, String> files(Path output) throws IOException {
    TreeMap<String, String> files = new TreeMap<>();
    if (output == null || !Files.exists(output)) {
      return files;
    }
    try (Stream<Path> walk = Files.walk(output)) {
      for (Path p : walk.filter(Files::isRegularFile).toList()) {
        if (!p.getFileName().toString().equals("timing.json")) {
          files.put(output.relativize(p).toString(), new String(Files.readAllBytes(p), StandardCharsets.ISO_8859_1));
        }
      }
    }
    return files;
  }

  /** Runs {@code args} (with {@code {out}} standing for a fresh output folder) directly and served, and compares. */
  private static void sameServedAsDirect(String... args) throws Exception {
    Path output = dir.resolve("out");
    String[] resolved = Stream.of(args).map(a -> a.replace("{out}", output.toString())).toArray(String[]::new);
    Outcome direct = direct(output, resolved);
    deleteTree(output);
    Outcome served = served(output, resolved);
    deleteTree(output);
    String what = String.join(" ", resolved);
    assertEquals(direct.status(), served.status(), what);
    assertEquals(direct.out(), served.out(), what);
    assertEquals(direct.err(), served.err(), what);
    assertEquals(direct.files().keySet(), served.files().keySet(), what);
    for (String f : direct.files().keySet()) {
      assertArrayEquals(direct.files().get(f).getBytes(StandardCharsets.ISO_8859_1), served.files().get(f).getBytes(StandardCharsets.ISO_8859_1), what + ": " + f);
    }
  }

  private static void deleteTree(Path p) throws IOException {
    if (!Files.exists(p)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(p)) {
      walk.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
  }

  @Test
  void commandsServedGiveTheSameStatusStreamsAndFilesAsDirectRuns() throws Exception {
    sameServedAsDirect("--version");
    sameServedAsDirect("list");
    sameServedAsDirect("replay", "--help");
    sameServedAsDirect("replay", "churn:ops=400", "-a", "first-fit,buddy", "-o", "{out}");
    sameServedAsDirect("replay", "churn:ops=300", "--seeds", "1..5", "-a", "first-fit", "--quiet", "-o", "{out}");
    sameServedAsDirect("serving", "requests:preset=sharegpt,count=40", "--system", "vllm", "-o", "{out}");
    sameServedAsDirect("compare", "churn:ops=200", "--quiet", "-o", "{out}");
    // bad input: one line on stderr, status 2, nothing written
    sameServedAsDirect("replay", "churn:ops=-5", "-o", "{out}");
    sameServedAsDirect("replay", "churn:ops=100", "--bogus");
    sameServedAsDirect("serving", "requests:preset=nope", "--system", "vllm", "-o", "{out}");
    // a command run twice in the same server gives the same files again
    sameServedAsDirect("serving", "requests:preset=sharegpt,count=40", "--system", "vllm", "-o", "{out}");
  }

  /** The Perl client's program, as the launcher holds it (read once). */
  private static String perlProgram;

  private static String perlProgram() throws IOException {
    if (perlProgram == null) {
      Path launcher = Path.of("..", "kvsim");
      assumeTrue(Files.isRegularFile(launcher), "the launcher is beside simulator/");
      String script = Files.readString(launcher);
      int start = script.indexOf("perl_client='\n");
      assertTrue(start > 0, "the launcher holds the Perl client");
      start = script.indexOf('\n', start) + 1;
      perlProgram = script.substring(start, script.indexOf("\n'\n", start) + 1);
    }
    return perlProgram;
  }

  /**
   * Starts the launcher's Perl client with {@code verb} and {@code args} as {@code identity} against
   * {@code socket}, its standard error to {@code err}, under {@code PERL5LIB=perlLib} (null: unset);
   * the test is skipped where there is no perl.
   */
  private static ProcessBuilder perlClient(Path perlLib, Path socket, ServerClient.Identity identity, Path err, String verb, String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of("perl", "-e", perlProgram(), "--", socket.toString(), identity.build(), identity.settings(), identity.folder(), verb));
    command.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(command).redirectError(err.toFile());
    pb.environment().remove("PERL5LIB");
    pb.environment().remove("PERL5OPT");
    if (perlLib != null) {
      pb.environment().put("PERL5LIB", perlLib.toString());
    }
    return pb;
  }

  private static Process start(ProcessBuilder pb) throws IOException {
    try {
      return pb.start();
    } catch (IOException e) {
      assumeTrue(false, "no perl here, so the launcher uses the Java client: " + e.getMessage());
      throw e;
    }
  }

  /** Runs the launcher's Perl client with {@code verb} and {@code args} as {@code identity} against {@code socket}. */
  private static Outcome perl(Path socket, ServerClient.Identity identity, String verb, String... args) throws Exception {
    return perl(null, socket, identity, verb, args);
  }

  /** As {@link #perl(Path, ServerClient.Identity, String, String...)}, with {@code PERL5LIB=perlLib} (null: unset). */
  private static Outcome perl(Path perlLib, Path socket, ServerClient.Identity identity, String verb, String... args) throws Exception {
    Path out = dir.resolve("perl.out");
    Path err = dir.resolve("perl.err");
    Process p = start(perlClient(perlLib, socket, identity, err, verb, args).redirectOutput(out.toFile()));
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the Perl client timed out");
    return new Outcome(p.exitValue(), Files.readString(out), Files.readString(err), new TreeMap<>());
  }

  /** Runs {@code verb} with {@code args} as {@code identity} through both clients and compares their status and streams. */
  private static Outcome sameByBothClients(Path socket, ServerClient.Identity identity, String verb, String... args) throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int status = ServerClient.request(socket, identity, verb, args, out, err);
    Outcome perl = perl(socket, identity, verb, args);
    String what = verb + " " + String.join(" ", args);
    assertEquals(status, perl.status(), what);
    assertEquals(out.toString(StandardCharsets.UTF_8).replaceAll("commands served: \\d+", "commands served: N"),
        perl.out().replaceAll("commands served: \\d+", "commands served: N"), what);
    assertEquals(err.toString(StandardCharsets.UTF_8), perl.err(), what);
    return perl;
  }

  @Test
  void theLaunchersPerlClientGivesWhatTheJavaClientGives() throws Exception {
    assertEquals(0, sameByBothClients(socket, identity(), "run", "--version").status());
    sameByBothClients(socket, identity(), "run", "replay", "churn:ops=300", "--seeds", "1..3", "-a", "first-fit", "--quiet", "--no-report", "-o", dir.resolve("p").toString(), "--force");
    sameByBothClients(socket, identity(), "run", "replay", "--help");
    Outcome bad = sameByBothClients(socket, identity(), "run", "replay", "churn:ops=-5");
    assertEquals(2, bad.status());
    assertTrue(bad.err().startsWith("kvsim: error: "), bad.err());
    if ("UTF-8".equals(System.getProperty("sun.jnu.encoding"))) { // so that this JVM passes the argument to perl as UTF-8
      // an argument of non-ASCII bytes arrives as the same string
      sameByBothClients(socket, identity(), "run", "replay", "churn:ops=300", "-a", "fïrst-fit");
    }
    // refusals: nothing printed for run (the launcher runs it), the reason for status
    assertEquals(ServerClient.NO_SERVER, sameByBothClients(socket, new ServerClient.Identity(BUILD, "other", folder()), "run", "--version").status());
    Outcome elsewhere = sameByBothClients(socket, new ServerClient.Identity(BUILD, SETTINGS, "/elsewhere"), "status");
    assertEquals(ServerClient.NO_SERVER, elsewhere.status());
    assertTrue(elsewhere.err().contains("not /elsewhere"), elsewhere.err());
    assertTrue(sameByBothClients(socket, identity(), "status").out().startsWith("kvsim server: serving "));
    // no server, and a killed server's socket, which the client removes
    assertEquals(ServerClient.NO_SERVER, perl(dir.resolve("none.sock"), identity(), "run", "--version").status());
    Path killed = dir.resolve("killed-perl.sock");
    try (java.nio.channels.ServerSocketChannel s = java.nio.channels.ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      s.bind(UnixDomainSocketAddress.of(killed));
    }
    assertEquals(ServerClient.NO_SERVER, perl(killed, identity(), "run", "--version").status());
    assertFalse(Files.exists(killed), "a socket nothing listens on is removed");
    // a perl without its Socket module: on Linux the client does without it (Note [Few processes] in
    // the launcher); elsewhere it says nothing and leaves the command to the launcher
    Path noSocket = Files.createDirectories(dir.resolve("no-socket-module"));
    Files.writeString(noSocket.resolve("Socket.pm"), "die \"no Socket module here\\n\";\n");
    Outcome without = perl(noSocket, socket, identity(), "run", "--version");
    if (System.getProperty("os.name").equals("Linux")) {
      assertEquals(0, without.status(), without.err());
      assertEquals(perl(socket, identity(), "run", "--version").out(), without.out());
      assertEquals("", without.err());
    } else {
      assertEquals(ServerClient.NO_SERVER, without.status());
      assertEquals("", without.out() + without.err());
    }
    assertTrue(server.isAlive());
  }

  /**
   * A reader that leaves early ({@code kvsim ... | head}) neither ends the command nor the server: as
   * in a direct run, whose JVM drops what it can no longer write, the command runs to its end, with
   * its status and files, through either client.
   */
  @Test
  void aReaderThatLeavesEarlyStopsNeitherTheCommandNorTheServer() throws Exception {
    Path output = dir.resolve("early");
    String[] args = {"replay", "churn:ops=300", "--seeds", "1..3", "-a", "first-fit", "-o", output.toString(), "--force"};
    OutputStream closed = new OutputStream() {
      @Override
      public void write(int b) throws IOException {
        throw new IOException("Broken pipe");
      }
    };
    assertEquals(0, ServerClient.request(socket, identity(), "run", args, closed, closed));
    assertTrue(Files.isRegularFile(output.resolve("summary.json")), "the command ran to its end");
    deleteTree(output);
    Process p = start(perlClient(null, socket, identity(), dir.resolve("early.err"), "run", args));
    p.getInputStream().close(); // before the command prints its table
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the Perl client timed out");
    assertEquals(0, p.exitValue(), Files.readString(dir.resolve("early.err")));
    assertTrue(Files.isRegularFile(output.resolve("summary.json")), "the command ran to its end");
    assertTrue(server.isAlive());
    assertEquals(0, ServerClient.request(socket, identity(), "status", new String[0], new ByteArrayOutputStream(), new ByteArrayOutputStream()));
  }

  @Test
  void requestsOfOtherSettingsOrFoldersAreRefusedAndTheServerGoesOn() throws Exception {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    assertEquals(ServerClient.NO_SERVER, ServerClient.request(socket, new ServerClient.Identity(BUILD, "other", folder()), "run", new String[] {"--version"}, out, err));
    assertEquals(ServerClient.NO_SERVER, ServerClient.request(socket, new ServerClient.Identity(BUILD, SETTINGS, "/elsewhere"), "run", new String[] {"--version"}, out, err));
    assertEquals("", out.toString(StandardCharsets.UTF_8), "a refused command prints nothing: the launcher runs it itself");
    assertEquals("", err.toString(StandardCharsets.UTF_8));
    assertEquals(ServerClient.NO_SERVER, ServerClient.request(socket, new ServerClient.Identity(BUILD, SETTINGS, "/elsewhere"), "status", new String[0], out, err));
    assertTrue(err.toString(StandardCharsets.UTF_8).contains("serves " + folder() + ", not /elsewhere"), err.toString(StandardCharsets.UTF_8));
    assertTrue(server.isAlive());
    assertEquals(0, ServerClient.request(socket, identity(), "run", new String[] {"--version"}, out, err));
    // status (and stop) answer a launcher of other settings, saying so
    ByteArrayOutputStream said = new ByteArrayOutputStream();
    assertEquals(0, ServerClient.request(socket, new ServerClient.Identity(BUILD, "other", folder()), "status", new String[0], said, err));
    assertTrue(said.toString(StandardCharsets.UTF_8).contains("runs another build or settings than this launcher's"), said.toString(StandardCharsets.UTF_8));
  }

  @Test
  void noServerMeansTheLauncherRunsTheCommand() throws Exception {
    assertEquals(ServerClient.NO_SERVER,
        ServerClient.request(dir.resolve("none.sock"), identity(), "run", new String[] {"--version"}, new ByteArrayOutputStream(), new ByteArrayOutputStream()));
    // The socket of a server that was killed: nothing listens, and the client removes it.
    Path killed = dir.resolve("killed.sock");
    try (java.nio.channels.ServerSocketChannel s = java.nio.channels.ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      s.bind(UnixDomainSocketAddress.of(killed));
    }
    assertTrue(Files.exists(killed));
    assertEquals(ServerClient.NO_SERVER,
        ServerClient.request(killed, identity(), "run", new String[] {"--version"}, new ByteArrayOutputStream(), new ByteArrayOutputStream()));
    assertFalse(Files.exists(killed), "a socket nothing listens on is removed");
  }

  @Test
  void aRequestOfAnotherBuildStopsTheServer() throws Exception {
    Path other = dir.resolve("b.sock");
    Process p = startServer(other, "old-build");
    assertEquals(ServerClient.NO_SERVER,
        ServerClient.request(other, new ServerClient.Identity("new-build", SETTINGS, folder()), "run", new String[] {"--version"}, new ByteArrayOutputStream(), new ByteArrayOutputStream()));
    assertTrue(p.waitFor(30, TimeUnit.SECONDS), "a stale server stops");
    assertFalse(Files.exists(other), "its socket is removed");
  }

  /**
   * Note [Sources checked by the server] in {@code kvsim}: a launcher that sends "check-sources"
   * for the jar's size and time is served while the jar and sources are the build's; once a source
   * is newer than the jar, it is refused and the server stops.
   */
  @Test
  void aBuildCheckedByTheServerIsServedUntilASourceIsNewer() throws Exception {
    Path clone = dir.resolve("clone");
    Path source = Files.createDirectories(clone.resolve("simulator/src/main")).resolve("A.java");
    Files.writeString(source, "class A {}");
    Files.writeString(clone.resolve("pom.xml"), "<project/>");
    Files.writeString(clone.resolve("simulator/pom.xml"), "<project/>");
    Path jar = Files.createDirectories(clone.resolve("simulator/target")).resolve("kvsim.jar");
    Files.write(jar, new byte[100]);
    java.nio.file.attribute.FileTime older = java.nio.file.attribute.FileTime.fromMillis(Files.getLastModifiedTime(jar).toMillis() - 60_000);
    for (Path p : List.of(source, source.getParent(), clone.resolve("pom.xml"), clone.resolve("simulator/pom.xml"))) {
      Files.setLastModifiedTime(p, older);
    }
    String build = jar + " 100 " + Files.getLastModifiedTime(jar).to(TimeUnit.SECONDS) + " /usr/bin/java";
    Path other = dir.resolve("d.sock");
    Process p = startServer(other, build);
    ServerClient.Identity checked = new ServerClient.Identity(jar + " check-sources /usr/bin/java", SETTINGS, folder());
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    assertEquals(0, ServerClient.request(other, checked, "run", new String[] {"--version"}, out, new ByteArrayOutputStream()));
    assertTrue(out.toString(StandardCharsets.UTF_8).startsWith("kvsim "), out.toString(StandardCharsets.UTF_8));
    Files.setLastModifiedTime(source, java.nio.file.attribute.FileTime.fromMillis(Files.getLastModifiedTime(jar).toMillis() + 1000));
    assertEquals(ServerClient.NO_SERVER, ServerClient.request(other, checked, "run", new String[] {"--version"}, new ByteArrayOutputStream(), new ByteArrayOutputStream()));
    assertTrue(p.waitFor(30, TimeUnit.SECONDS), "a stale server stops");
  }

  @Test
  void aClientThatLeavesDuringItsCommandStopsTheServerAndLeavesNoTemporaries() throws Exception {
    Path other = dir.resolve("c.sock");
    Process p = startServer(other, BUILD);
    Path results = Files.createDirectories(dir.resolve("left"));
    Path output = results.resolve("run");
    try (SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      channel.connect(UnixDomainSocketAddress.of(other));
      DataOutputStream request = new DataOutputStream(Channels.newOutputStream(channel));
      ServerClient.writeString(request, ServerClient.MAGIC);
      ServerClient.writeString(request, BUILD);
      ServerClient.writeString(request, SETTINGS);
      ServerClient.writeString(request, folder());
      ServerClient.writeString(request, "run");
      String[] args = {"serving", "requests:preset=azure-conv,count=400000", "--system", "vllm", "--quiet", "-o", output.toString()};
      request.writeInt(args.length);
      for (String a : args) {
        ServerClient.writeString(request, a);
      }
      request.flush();
      Thread.sleep(1500); // the run is under way
    }
    assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the server stops when its client leaves");
    assertEquals(130, p.exitValue());
    try (Stream<Path> left = Files.list(results)) {
      assertEquals(List.of(), left.toList(), "no result and no temporaries are left");
    }
  }
}
