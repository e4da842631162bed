package org.fluss_datafusion.harness;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.fluss.row.BinaryString;
import org.apache.fluss.row.Decimal;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.row.TimestampLtz;
import org.apache.fluss.row.TimestampNtz;
import org.apache.fluss.types.DataType;
import org.apache.fluss.types.DecimalType;
import org.apache.fluss.types.RowType;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.util.HexFormat;
import java.util.List;

/**
 * Values between the JSON protocol and Fluss rows, and Flink's answers as canonical text.
 *
 * <p>The canonical text is the contract with the Rust tests (README.md here): both sides render
 * every value this way before comparing, so the comparison never depends on an engine's own
 * formatting.
 */
final class Values {
    private Values() {}

    /** A full-width row of {@code rowType} from JSON values of {@code columns} (others NULL). */
    static GenericRow row(RowType rowType, List<String> columns, JsonNode values) {
        if (!values.isArray() || values.size() != columns.size()) {
            throw new IllegalArgumentException(
                    "a row must have one value per column " + columns + ": " + values);
        }
        GenericRow row = new GenericRow(rowType.getFieldCount());
        for (int i = 0; i < columns.size(); i++) {
            int index = rowType.getFieldIndex(columns.get(i));
            if (index < 0) {
                throw new IllegalArgumentException("no column " + columns.get(i));
            }
            row.setField(index, internal(rowType.getTypeAt(index), values.get(i)));
        }
        return row;
    }

    /** The Fluss internal value of a JSON value for a column of type {@code type}. */
    static Object internal(DataType type, JsonNode v) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
                return v.asInt();
            case BIGINT:
                return v.asLong();
            case FLOAT:
                return (float) v.asDouble();
            case DOUBLE:
                return v.asDouble();
            case CHAR:
            case STRING:
                return BinaryString.fromString(v.asText());
            case DECIMAL:
                DecimalType d = (DecimalType) type;
                return Decimal.fromBigDecimal(
                        new BigDecimal(v.asText()), d.getPrecision(), d.getScale());
            case DATE:
                return (int) LocalDate.parse(v.asText()).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE:
                return (int) (LocalTime.parse(v.asText()).toNanoOfDay() / 1_000_000L);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
                return TimestampNtz.fromLocalDateTime(LocalDateTime.parse(v.asText()));
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return TimestampLtz.fromInstant(Instant.parse(v.asText()));
            case BINARY:
            case BYTES:
                return HexFormat.of().parseHex(v.asText());
            default:
                throw new IllegalArgumentException("type " + type + " is not supported by the harness");
        }
    }

    /** A value Flink returned, as canonical text ({@code null} stays null). */
    static String text(Object v) {
        if (v == null) {
            return null;
        }
        if (v instanceof byte[]) {
            return HexFormat.of().formatHex((byte[]) v);
        }
        if (v instanceof BigDecimal) {
            return ((BigDecimal) v).toPlainString();
        }
        if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                return String.valueOf(d);
            }
            String s = new BigDecimal(v.toString()).stripTrailingZeros().toPlainString();
            return s;
        }
        if (v instanceof LocalDateTime) {
            return dateTime((LocalDateTime) v);
        }
        if (v instanceof Instant) {
            return dateTime(LocalDateTime.ofInstant((Instant) v, ZoneOffset.UTC)) + "Z";
        }
        if (v instanceof LocalTime) {
            LocalTime t = (LocalTime) v;
            return String.format("%02d:%02d:%02d", t.getHour(), t.getMinute(), t.getSecond())
                    + fraction(t.getNano());
        }
        return v.toString();
    }

    private static String dateTime(LocalDateTime t) {
        return String.format(
                        "%s %02d:%02d:%02d",
                        t.toLocalDate(), t.getHour(), t.getMinute(), t.getSecond())
                + fraction(t.getNano());
    }

    /** ".123" for 123 ms, "" for none: nanoseconds without trailing zeros. */
    private static String fraction(int nanos) {
        if (nanos == 0) {
            return "";
        }
        String s = String.format(".%09d", nanos);
        int end = s.length();
        while (s.charAt(end - 1) == '0') {
            end--;
        }
        return s.substring(0, end);
    }
}
