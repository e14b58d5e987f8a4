import java.io.ByteArrayInputStream;
import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.HadoopReadOptions;
import org.apache.parquet.format.PageHeader;
import org.apache.parquet.format.Util;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.internal.column.columnindex.OffsetIndex;
import org.xerial.snappy.Snappy;

/**
 * The least any seek of R rows spread at random over a Parquet lake must do: read (through Hadoop's
 * checksummed local file system, as Spark does) and decompress every page of every column that holds
 * one of the rows, found with the files' offset indexes. Nothing is decoded, no index is looked up,
 * nothing is planned, so its time bounds every page-level read of those rows from below.
 *
 * Snappy-compressed files of one row group each, as the TPC-H lake of the benchmarks is. Run with
 * Spark's jars, those of the virtual environment's pyspark (java 11+ runs a single source file):
 *
 *   java -cp '<site-packages>/pyspark/jars/*' benchmarks/page_read_bound/PageReadBound.java \
 *     <lake>/lineitem <rows> <rounds> <threads>
 *
 * Prints, per round, the milliseconds, the pages read and the bytes decompressed; the first rounds
 * warm the JIT up.
 */
public class PageReadBound {
  public static void main(String[] args) throws Exception {
    File dir = new File(args[0]);
    int rows = Integer.parseInt(args[1]);
    int rounds = Integer.parseInt(args[2]);
    int threads = Integer.parseInt(args[3]);
    Configuration conf = new Configuration();
    File[] files = dir.listFiles((d, n) -> n.endsWith(".parquet"));
    Arrays.sort(files);
    List<Long> rowCounts = new ArrayList<>();
    List<List<OffsetIndex>> indexes = new ArrayList<>();
    long total = 0;
    for (File f : files) {
      try (ParquetFileReader reader = ParquetFileReader.open(
          HadoopInputFile.fromPath(new Path(f.toURI()), conf), HadoopReadOptions.builder(conf).build())) {
        List<BlockMetaData> blocks = reader.getFooter().getBlocks();
        if (blocks.size() != 1) throw new IllegalArgumentException(f + ": one row group per file expected");
        List<OffsetIndex> perColumn = new ArrayList<>();
        for (ColumnChunkMetaData c : blocks.get(0).getColumns()) perColumn.add(reader.readOffsetIndex(c));
        indexes.add(perColumn);
        rowCounts.add(blocks.get(0).getRowCount());
        total += blocks.get(0).getRowCount();
      }
    }
    FileSystem fs = FileSystem.getLocal(conf);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    Random random = new Random(7);
    for (int round = 0; round < rounds; round++) {
      // The rows sought, by file: what a key's lines are in a lake in random order.
      Map<Integer, TreeSet<Long>> sought = new TreeMap<>();
      for (int i = 0; i < rows; i++) {
        long row = (long) (random.nextDouble() * total);
        int file = 0;
        while (row >= rowCounts.get(file)) row -= rowCounts.get(file++);
        sought.computeIfAbsent(file, k -> new TreeSet<>()).add(row);
      }
      long start = System.nanoTime();
      List<Future<long[]>> reads = new ArrayList<>();
      for (Map.Entry<Integer, TreeSet<Long>> e : sought.entrySet()) {
        int file = e.getKey();
        TreeSet<Long> wanted = e.getValue();
        reads.add(pool.submit(() -> readPages(fs, files[file], indexes.get(file), rowCounts.get(file), wanted)));
      }
      long pages = 0, bytes = 0;
      for (Future<long[]> r : reads) {
        long[] done = r.get();
        pages += done[0];
        bytes += done[1];
      }
      System.out.printf("round %d: %d rows, %.1f ms, %d pages, %d MB decompressed%n",
          round, rows, (System.nanoTime() - start) / 1e6, pages, bytes >> 20);
    }
    pool.shutdown();
  }

  /** Reads and decompresses the pages of `file` holding a row of `wanted`: (pages, bytes decompressed). */
  private static long[] readPages(FileSystem fs, File file, List<OffsetIndex> indexes, long rowCount,
      TreeSet<Long> wanted) throws Exception {
    long pages = 0, bytes = 0;
    byte[] out = new byte[8 << 20];
    try (FSDataInputStream in = fs.open(new Path(file.toURI()))) {
      for (OffsetIndex index : indexes) {
        for (int p = 0; p < index.getPageCount(); p++) {
          Long first = wanted.ceiling(index.getFirstRowIndex(p));
          if (first == null || first > index.getLastRowIndex(p, rowCount)) continue;
          byte[] page = new byte[index.getCompressedPageSize(p)];
          in.readFully(index.getOffset(p), page);
          ByteArrayInputStream header = new ByteArrayInputStream(page);
          int before = header.available();
          PageHeader h = Util.readPageHeader(header);
          int headerBytes = before - header.available();
          bytes += Snappy.uncompress(page, headerBytes, h.getCompressed_page_size(), out, 0);
          pages++;
        }
      }
    }
    return new long[] {pages, bytes};
  }
}
