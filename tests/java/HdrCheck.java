import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.util.Base64;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;
import org.HdrHistogram.HistogramLogReader;

/**
 * Reference numbers from Java HdrHistogram for loadgen's tests.
 * "read": for each base64 V2 histogram on stdin, print total, min, max, mean, percentiles and
 * the percentiles(100) iteration. "encode": record a deterministic 12 h histogram, print it
 * base64-encoded, then its numbers as in "read". "log FILE": for each interval of an hlog file,
 * print its absolute start and end (ms since the epoch), then its numbers as in "read".
 */
public class HdrCheck {
    private static final double[] PERCENTILES = {
        0.0, 1.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 99.999, 100.0
    };

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("encode")) {
            Histogram histogram = new Histogram(43_200_000_000L, 5);
            long state = 42;
            for (int i = 0; i < 100_000; i++) {
                state = state * 6364136223846793005L + 1442695040888963407L;
                long value = (state >>> 33) % 5_000_000L;
                histogram.recordValue(i % 1000 == 0 ? value * 1000 : value);
            }
            ByteBuffer buffer = ByteBuffer.allocate(histogram.getNeededByteBufferCapacity());
            int length = histogram.encodeIntoCompressedByteBuffer(buffer);
            byte[] bytes = new byte[length];
            buffer.flip();
            buffer.get(bytes);
            System.out.println(Base64.getEncoder().encodeToString(bytes));
            report(histogram);
            return;
        }
        if (args.length > 1 && args[0].equals("log")) {
            HistogramLogReader log = new HistogramLogReader(args[1]);
            EncodableHistogram interval;
            while ((interval = log.nextIntervalHistogram()) != null) {
                System.out.println(
                    "interval " + interval.getStartTimeStamp() + " " + interval.getEndTimeStamp());
                report((Histogram) interval);
            }
            return;
        }
        BufferedReader reader = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = reader.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            byte[] bytes = Base64.getDecoder().decode(line.trim());
            report(Histogram.decodeFromCompressedByteBuffer(ByteBuffer.wrap(bytes), Long.MIN_VALUE));
        }
    }

    private static void report(Histogram histogram) {
        StringBuilder out = new StringBuilder();
        out.append("total ").append(histogram.getTotalCount()).append('\n');
        out.append("min ").append(histogram.getMinValue()).append('\n');
        out.append("max ").append(histogram.getMaxValue()).append('\n');
        out.append("mean ").append(histogram.getMean()).append('\n');
        for (double p : PERCENTILES) {
            out.append("pct ").append(p).append(' ').append(histogram.getValueAtPercentile(p)).append('\n');
        }
        for (HistogramIterationValue v : histogram.percentiles(100)) {
            out.append("q ").append(v.getPercentile()).append(' ').append(v.getValueIteratedTo()).append('\n');
        }
        out.append("end\n");
        System.out.print(out);
    }
}
