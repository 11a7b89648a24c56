package org.imixs.archive.check;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import jakarta.xml.bind.JAXBContext;
import jakarta.xml.bind.Marshaller;
import jakarta.xml.bind.Unmarshaller;

import org.imixs.workflow.ItemCollection;
import org.imixs.workflow.xml.XMLDocument;
import org.imixs.workflow.xml.XMLDocumentAdapter;

/**
 * Reads and writes Imixs XML with the real Imixs classes, the way the Java archive's
 * DataService does (JAXB unmarshal + XMLDocumentAdapter.putDocument; getDocument + marshal).
 *
 * <pre>
 * XmlCheck IN_DIR OUT_DIR COUNT SEED
 * </pre>
 *
 * For every IN_DIR/NAME.xml: OUT_DIR/NAME.json is the typed dump of the ItemCollection Java
 * read, OUT_DIR/NAME.rewritten.xml what Java writes back; on failure OUT_DIR/NAME.error holds
 * the exception. Then COUNT documents made from SEED: OUT_DIR/java-N.xml as Java writes them
 * and OUT_DIR/java-N.json the dump of what was written.
 *
 * The dump: a document is {"items": {name: [value...]}}; a value is {"t": type, "v": text}
 * with t in string, int, long, short, byte, biginteger, double, float, boolean, decimal,
 * date (v = epoch millis), bytes (v = base64), char (v = code), null, list (v = [value...]),
 * map (v = {key: [value...]}), or other (v = class name and text).
 */
public final class XmlCheck {

    private XmlCheck() {
    }

    public static void main(String[] args) throws Exception {
        Path in = Path.of(args[0]);
        Path out = Path.of(args[1]);
        int count = Integer.parseInt(args[2]);
        long seed = Long.parseLong(args[3]);
        JAXBContext context = JAXBContext.newInstance(XMLDocument.class);
        Files.createDirectories(out);
        try (DirectoryStream<Path> files = Files.newDirectoryStream(in, "*.xml")) {
            for (Path file : files) {
                readOne(context, file, out);
            }
        }
        Random random = new Random(seed);
        for (int n = 0; n < count; n++) {
            ItemCollection doc = n == 0 ? fixedDocument() : new Generator(random).document();
            Files.write(out.resolve("java-" + n + ".xml"), write(context, doc));
            Files.writeString(out.resolve("java-" + n + ".json"), dump(doc), StandardCharsets.UTF_8);
        }
    }

    private static void readOne(JAXBContext context, Path file, Path out) throws IOException {
        String name = file.getFileName().toString().replaceFirst("\\.xml$", "");
        try {
            Unmarshaller unmarshaller = context.createUnmarshaller();
            Object read = unmarshaller.unmarshal(new ByteArrayInputStream(Files.readAllBytes(file)));
            ItemCollection doc = XMLDocumentAdapter.putDocument((XMLDocument) read);
            String json = dump(doc);
            byte[] rewritten = write(context, doc);
            Files.writeString(out.resolve(name + ".json"), json, StandardCharsets.UTF_8);
            Files.write(out.resolve(name + ".rewritten.xml"), rewritten);
        } catch (Exception | Error e) {
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            Files.writeString(out.resolve(name + ".error"), trace.toString(), StandardCharsets.UTF_8);
        }
    }

    /** As DataService.getRawData: marshal of XMLDocumentAdapter.getDocument. */
    private static byte[] write(JAXBContext context, ItemCollection doc) throws Exception {
        Marshaller marshaller = context.createMarshaller();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        marshaller.marshal(XMLDocumentAdapter.getDocument(doc), bytes);
        return bytes.toByteArray();
    }

    // -- the typed dump ------------------------------------------------------------------

    static String dump(ItemCollection doc) {
        StringBuilder json = new StringBuilder("{\"items\": {");
        boolean first = true;
        for (Map.Entry<String, List<Object>> item : new TreeMap<>(doc.getAllItems()).entrySet()) {
            json.append(first ? "" : ", ");
            first = false;
            string(json, item.getKey());
            json.append(": ");
            list(json, item.getValue());
        }
        return json.append("}}\n").toString();
    }

    private static void list(StringBuilder json, List<?> values) {
        if (values == null) {
            json.append("null");
            return;
        }
        json.append('[');
        for (int i = 0; i < values.size(); i++) {
            json.append(i > 0 ? ", " : "");
            value(json, values.get(i));
        }
        json.append(']');
    }

    private static void value(StringBuilder json, Object value) {
        if (value == null) {
            json.append("{\"t\": \"null\"}");
            return;
        }
        if (value instanceof Map<?, ?> map) {
            json.append("{\"t\": \"map\", \"v\": {");
            boolean first = true;
            for (Map.Entry<?, ?> entry : new TreeMap<>(map).entrySet()) {
                json.append(first ? "" : ", ");
                first = false;
                string(json, String.valueOf(entry.getKey()));
                json.append(": ");
                Object entryValue = entry.getValue();
                list(json, entryValue instanceof List<?> l ? l : List.of(entryValue));
            }
            json.append("}}");
            return;
        }
        if (value instanceof List<?> l) {
            json.append("{\"t\": \"list\", \"v\": ");
            list(json, l);
            json.append('}');
            return;
        }
        String type;
        String text;
        if (value instanceof String s) {
            type = "string";
            text = s;
        } else if (value instanceof Integer || value instanceof Long || value instanceof Short
                || value instanceof Byte || value instanceof BigInteger || value instanceof Double
                || value instanceof Float || value instanceof Boolean) {
            type = value.getClass().getSimpleName().toLowerCase();
            text = value.toString();
        } else if (value instanceof BigDecimal d) {
            type = "decimal";
            text = d.toString();
        } else if (value instanceof Date d) {
            type = "date";
            text = Long.toString(d.getTime());
        } else if (value instanceof byte[] b) {
            type = "bytes";
            text = Base64.getEncoder().encodeToString(b);
        } else if (value instanceof Character c) {
            type = "char";
            text = Integer.toString(c);
        } else {
            type = "other";
            text = value.getClass().getName() + ": " + value;
        }
        json.append("{\"t\": \"").append(type).append("\", \"v\": ");
        string(json, text);
        json.append('}');
    }

    private static void string(StringBuilder json, String text) {
        json.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"' || c == '\\') {
                json.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                json.append(String.format("\\u%04x", (int) c));
            } else {
                json.append(c);
            }
        }
        json.append('"');
    }

    // -- documents Java writes -----------------------------------------------------------

    /** One value of every kind, with the empty and nested cases spelled out. */
    static ItemCollection fixedDocument() {
        ItemCollection doc = new ItemCollection();
        doc.replaceItemValue("$uniqueid", "270e3a6d-a0e4-4875-89f1-3b418859abe5-1519000000000");
        doc.replaceItemValue("$modified", new Date(1519000000123L));
        doc.replaceItemValue("txtname", new ArrayList<>(List.of("a", "b & <c>", "tab\tnewline\n")));
        doc.replaceItemValue("num", new ArrayList<>(List.of(1, 5L, (short) -3, (byte) 7, new BigInteger("100000000000000000000"),
                2.5, 1.0E16, Double.NaN, Double.NEGATIVE_INFINITY, 0.5f, true, new BigDecimal("12.50"))));
        doc.replaceItemValue("char", 'A');
        doc.replaceItemValue("bytes", new byte[] { 1, 2, 3 });
        doc.replaceItemValue("emptybytes", new byte[0]);
        doc.replaceItemValue("empty", new ArrayList<>());
        Map<String, Object> map = new HashMap<>();
        map.put("emptylist", new ArrayList<>());
        map.put("single", "not a list");
        map.put("Case", List.of(1, 2));
        map.put("nested", List.of(new HashMap<>(), new ArrayList<>()));
        doc.replaceItemValue("map", map);
        List<Object> nested = new ArrayList<>();
        nested.add(new ArrayList<>());
        nested.add(List.of("x", List.of(1, 2)));
        nested.add(new HashMap<>());
        doc.replaceItemValue("nested", new ArrayList<>(List.of(nested)));
        Map<String, Object> files = new HashMap<>();
        Map<String, Object> attributes = new HashMap<>();
        attributes.put("md5checksum", List.of("0CC175B9C0F1B6A831C399E269772661"));
        attributes.put("size", List.of(1));
        files.put("a.txt", List.of("text/plain", "a".getBytes(StandardCharsets.UTF_8), attributes));
        doc.replaceItemValue("$file", files);
        return doc;
    }

    /** Random documents of the value types Java's XMLItem writes. */
    static final class Generator {
        private final Random random;

        Generator(Random random) {
            this.random = random;
        }

        ItemCollection document() {
            ItemCollection doc = new ItemCollection();
            int items = 1 + random.nextInt(8);
            for (int i = 0; i < items; i++) {
                doc.replaceItemValue(name(), values(2));
            }
            return doc;
        }

        private String name() {
            String letters = "abcdefghijklmnopqrstuvwxyz.$_0123456789";
            StringBuilder name = new StringBuilder();
            name.append(letters.charAt(random.nextInt(26)));
            int length = random.nextInt(10);
            for (int i = 0; i < length; i++) {
                name.append(letters.charAt(random.nextInt(letters.length())));
            }
            return name.toString();
        }

        private List<Object> values(int depth) {
            List<Object> values = new ArrayList<>();
            int count = random.nextInt(4);
            for (int i = 0; i < count; i++) {
                values.add(value(depth));
            }
            return values;
        }

        private Object value(int depth) {
            int kind = random.nextInt(depth > 0 ? 17 : 15);
            switch (kind) {
                case 0: return text();
                case 1: return random.nextInt();
                case 2: return random.nextLong();
                case 3: return (short) random.nextInt();
                case 4: return (byte) random.nextInt();
                case 5: return new BigInteger(100, random).subtract(BigInteger.ONE.shiftLeft(99));
                case 6: return random.nextBoolean() ? random.nextDouble() * 1e6 : Double.longBitsToDouble(random.nextLong());
                case 7: return random.nextFloat() * 1000;
                case 8: return random.nextBoolean();
                case 9: return new BigDecimal(BigInteger.valueOf(random.nextLong()), random.nextInt(12));
                case 10: return new Date(random.nextLong() % 4102444800000L);
                case 11: {
                    byte[] bytes = new byte[random.nextInt(40)];
                    random.nextBytes(bytes);
                    return bytes;
                }
                case 12: return (char) ('A' + random.nextInt(50));
                case 13: return text();
                case 14: return random.nextInt(3) == 0 ? Long.MIN_VALUE : Integer.MAX_VALUE;
                case 15: {
                    Map<String, Object> map = new HashMap<>();
                    int entries = random.nextInt(4);
                    for (int i = 0; i < entries; i++) {
                        map.put(name(), values(depth - 1));
                    }
                    return map;
                }
                default: {
                    List<Object> list = values(depth - 1);
                    if (random.nextInt(4) == 0) {
                        list.add(null);
                    }
                    return list;
                }
            }
        }

        private String text() {
            String pool = "ab c&<>\"'\t\näöüß€中文]]>";
            StringBuilder text = new StringBuilder();
            int length = random.nextInt(20);
            for (int i = 0; i < length; i++) {
                text.append(pool.charAt(random.nextInt(pool.length())));
            }
            return text.toString();
        }
    }
}
