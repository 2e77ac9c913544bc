/* test_strbuf: growing the buffer, and escaping target bytes for JSON and for display. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util/strbuf.h"

static char *json_of(const char *bytes, size_t len)
{
    struct strbuf sb = {0};
    strbuf_json_string(&sb, bytes, len);
    assert_false(sb.failed);
    return sb.data;
}

static void check_json(const char *bytes, const char *expected)
{
    char *got = json_of(bytes, strlen(bytes));
    assert_string_equal(got, expected);
    free(got);
}

static void check_text(const char *bytes, bool quoted, const char *expected)
{
    struct strbuf sb = {0};
    if (quoted) {
        strbuf_text_quoted(&sb, bytes, strlen(bytes));
    } else {
        strbuf_text(&sb, bytes, strlen(bytes));
    }
    assert_string_equal(sb.data, expected);
    strbuf_free(&sb);
}

static void test_strbuf_append_grows_and_stays_nul_terminated(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    for (int i = 0; i < 10000; i++) {
        strbuf_append(&sb, "abc", 3);
    }
    strbuf_printf(&sb, "%d-%s", 42, "x");
    assert_false(sb.failed);
    assert_int_equal(sb.len, 30004);
    assert_int_equal(strlen(sb.data), sb.len);
    assert_memory_equal(sb.data + 29997, "abc42-x", 7);
    strbuf_free(&sb);
    assert_null(sb.data);
    strbuf_free(NULL);
}

static void test_strbuf_printf_formats_text_longer_than_the_buffer(void **state)
{
    (void)state;
    struct strbuf sb = {0};
    char big[5000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    strbuf_puts(&sb, "<");
    strbuf_printf(&sb, "%s>", big);
    assert_int_equal(sb.len, 5001);
    assert_int_equal(sb.data[0], '<');
    assert_int_equal(sb.data[5000], '>');
    strbuf_free(&sb);
}

static void test_strbuf_json_string_escapes_quote_backslash_and_controls(void **state)
{
    (void)state;
    check_json("say \"hi\"", "\"say \\\"hi\\\"\"");
    check_json("C:\\dir", "\"C:\\\\dir\"");
    check_json("a\nb\rc\td\be\ff", "\"a\\nb\\rc\\td\\be\\ff\"");
    check_json("\x01\x1f\x7f/", "\"\\u0001\\u001f\\u007f/\"");
    char *got = json_of("a\0b", 3);
    assert_string_equal(got, "\"a\\u0000b\"");
    free(got);
}

static void test_strbuf_json_string_passes_valid_multibyte_utf8(void **state)
{
    (void)state;
    /* é (2 bytes), € (3), U+D7FF and U+E000 around the surrogates, 🐍 (4), U+10FFFF. */
    check_json("caf\xc3\xa9 \xe2\x82\xac \xed\x9f\xbf\xee\x80\x80 "
               "\xf0\x9f\x90\x8d \xf4\x8f\xbf\xbf",
               "\"caf\xc3\xa9 \xe2\x82\xac \xed\x9f\xbf\xee\x80\x80 "
               "\xf0\x9f\x90\x8d \xf4\x8f\xbf\xbf\"");
    /* C1 controls are valid UTF-8 and legal in JSON strings. */
    check_json("\xc2\x85", "\"\xc2\x85\"");
}

static void test_strbuf_json_string_escapes_each_invalid_byte_as_lone_surrogate(void **state)
{
    (void)state;
    check_json("\xff", "\"\\udcff\"");
    check_json("a\x80z", "\"a\\udc80z\"");
    check_json("\xfe\xff\xf8", "\"\\udcfe\\udcff\\udcf8\"");
}

static void test_strbuf_json_string_rejects_overlong_sequences(void **state)
{
    (void)state;
    check_json("\xc0\x80", "\"\\udcc0\\udc80\"");
    check_json("\xc1\xbf", "\"\\udcc1\\udcbf\"");
    check_json("\xe0\x80\xaf", "\"\\udce0\\udc80\\udcaf\"");
    check_json("\xf0\x8f\xbf\xbf", "\"\\udcf0\\udc8f\\udcbf\\udcbf\"");
}

static void test_strbuf_json_string_rejects_surrogates_encoded_in_utf8(void **state)
{
    (void)state;
    check_json("\xed\xa0\x80", "\"\\udced\\udca0\\udc80\"");
    check_json("\xed\xbf\xbf", "\"\\udced\\udcbf\\udcbf\"");
}

static void test_strbuf_json_string_rejects_code_points_past_10ffff(void **state)
{
    (void)state;
    check_json("\xf4\x90\x80\x80", "\"\\udcf4\\udc90\\udc80\\udc80\"");
    check_json("\xf5\x80\x80\x80", "\"\\udcf5\\udc80\\udc80\\udc80\"");
}

static void test_strbuf_json_string_rejects_truncated_sequences(void **state)
{
    (void)state;
    check_json("\xe2\x82", "\"\\udce2\\udc82\"");
    check_json("\xe2\x82" "A", "\"\\udce2\\udc82A\"");
    check_json("\xf0\x9f\x90", "\"\\udcf0\\udc9f\\udc90\"");
    check_json("\xc3", "\"\\udcc3\"");
    /* A cut sequence must not swallow the valid character after it. */
    check_json("\xc3\xc3\xa9", "\"\\udcc3\xc3\xa9\"");
}

static void test_strbuf_json_string_writes_null_for_unknown(void **state)
{
    (void)state;
    char *got = json_of(NULL, 0);
    assert_string_equal(got, "null");
    free(got);
    check_json("", "\"\"");
}

/* Reads the JSON string literal at *P the way Python's json plus "surrogateescape" would,
 * appending the bytes it stands for to OUT. Fails the test on anything JSON does not allow. */
static size_t decode_json_string(const char *p, char *out)
{
    size_t n = 0;
    assert_int_equal(*p++, '"');
    while (*p != '"') {
        unsigned char b = (unsigned char)*p++;
        assert_true(b >= 0x20);
        if (b != '\\') {
            out[n++] = (char)b;
            continue;
        }
        static const char names[] = "\"\\/bfnrt";
        static const char values[] = "\"\\/\b\f\n\r\t";
        char e = *p++;
        const char *simple = e != '\0' ? strchr(names, e) : NULL;
        if (simple != NULL) {
            out[n++] = values[simple - names];
            continue;
        }
        assert_int_equal(e, 'u');
        unsigned cp = 0;
        assert_int_equal(sscanf(p, "%4x", &cp), 1);
        p += 4;
        if (cp >= 0xDC80 && cp <= 0xDCFF) {
            out[n++] = (char)(cp - 0xDC00);
        } else {
            assert_true(cp < 0x80);
            out[n++] = (char)cp;
        }
    }
    assert_int_equal(p[1], '\0');
    return n;
}

/* Whether BUF is well-formed UTF-8, decoding code points and checking their ranges. */
static bool is_utf8(const unsigned char *buf, size_t len)
{
    static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    size_t i = 0;
    while (i < len) {
        unsigned b = buf[i];
        size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > len) {
            return false;
        }
        unsigned cp = n == 1 ? b : b & (0x7F >> n);
        for (size_t k = 1; k < n; k++) {
            if ((buf[i + k] & 0xC0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (buf[i + k] & 0x3F);
        }
        if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
        }
        i += n;
    }
    return true;
}

static void test_strbuf_json_string_round_trips_random_bytes(void **state)
{
    (void)state;
    static const char *const pieces[] = {
        "a", "\"", "\\", "\n", "\x01", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x90\x8d", "\xed\xa0",
        "\xf4\x90", "\xc0", "\x80", "\xff", "\xe0\xa0",
    };
    uint64_t rng = 0x9E3779B97F4A7C15u;
    char bytes[256];
    char decoded[256];
    for (int round = 0; round < 20000; round++) {
        size_t len = 0;
        while (len < 200) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            if (rng % 17 == 0) {
                break;
            }
            if (rng % 3 == 0) {
                bytes[len++] = (char)(rng >> 24);
            } else {
                const char *piece = pieces[(rng >> 8) % (sizeof pieces / sizeof pieces[0])];
                memcpy(bytes + len, piece, strlen(piece));
                len += strlen(piece);
            }
        }
        char *json = json_of(bytes, len);
        assert_true(is_utf8((const unsigned char *)json, strlen(json)));
        assert_int_equal(decode_json_string(json, decoded), len);
        assert_memory_equal(decoded, bytes, len);
        free(json);
    }
}

static void test_strbuf_text_escapes_controls_and_invalid_bytes_as_hex(void **state)
{
    (void)state;
    check_text("plain caf\xc3\xa9 \"q\" \\", false, "plain caf\xc3\xa9 \"q\" \\");
    check_text("\x1b[31mred\x7f\n", false, "\\x1b[31mred\\x7f\\x0a");
    check_text("\xc2\x9b" "1m \xc2\xa0", false, "\\xc2\\x9b1m \xc2\xa0");
    check_text("\xff\xc0\x80\xe2\x82", false, "\\xff\\xc0\\x80\\xe2\\x82");
}

static void test_strbuf_text_quoted_escapes_quote_and_backslash(void **state)
{
    (void)state;
    check_text("we\"ird\\name\t", true, "\"we\\\"ird\\\\name\\x09\"");
    check_text("", true, "\"\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strbuf_append_grows_and_stays_nul_terminated),
        cmocka_unit_test(test_strbuf_printf_formats_text_longer_than_the_buffer),
        cmocka_unit_test(test_strbuf_json_string_escapes_quote_backslash_and_controls),
        cmocka_unit_test(test_strbuf_json_string_passes_valid_multibyte_utf8),
        cmocka_unit_test(test_strbuf_json_string_escapes_each_invalid_byte_as_lone_surrogate),
        cmocka_unit_test(test_strbuf_json_string_rejects_overlong_sequences),
        cmocka_unit_test(test_strbuf_json_string_rejects_surrogates_encoded_in_utf8),
        cmocka_unit_test(test_strbuf_json_string_rejects_code_points_past_10ffff),
        cmocka_unit_test(test_strbuf_json_string_rejects_truncated_sequences),
        cmocka_unit_test(test_strbuf_json_string_writes_null_for_unknown),
        cmocka_unit_test(test_strbuf_json_string_round_trips_random_bytes),
        cmocka_unit_test(test_strbuf_text_escapes_controls_and_invalid_bytes_as_hex),
        cmocka_unit_test(test_strbuf_text_quoted_escapes_quote_and_backslash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
