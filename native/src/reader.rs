//! The byte reader of Avro binary: zig-zag varints, length-prefixed bytes and strings, block
//! counts and indexes, each failing with `Malformed` (what was wrong, at which byte) instead of
//! panicking, whatever the input.

/// Malformed input: what was wrong and at which byte.
#[derive(Debug)]
pub(crate) struct Malformed(pub(crate) String);

pub(crate) type Read<T> = Result<T, Malformed>;

/// Reads `buf` from `pos` on; `pos` is where the next read starts.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8], pos: usize) -> Self {
        Reader { buf, pos }
    }

    #[inline(always)]
    pub(crate) fn byte(&mut self) -> Read<u8> {
        match self.buf.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(Malformed(format!(
                "record ends at byte {} inside a value",
                self.pos
            ))),
        }
    }

    /// An Avro int or long: a zig-zag varint of at most 10 bytes, whose tenth holds only the
    /// 64th bit (anything more overflows).
    #[inline(always)]
    pub(crate) fn long(&mut self) -> Read<i64> {
        let start = self.pos;
        let mut n: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(Malformed(format!(
                    "varint at byte {start} overflows 64 bits"
                )));
            }
            n |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(((n >> 1) as i64) ^ -((n & 1) as i64));
            }
            shift += 7;
        }
    }

    /// A boolean: the byte 0 or 1.
    pub(crate) fn boolean(&mut self) -> Read<bool> {
        let at = self.pos;
        match self.byte()? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(Malformed(format!("boolean byte {b} at byte {at}"))),
        }
    }

    /// Bytes or a string's bytes: a length (neither negative nor past the end), then as many.
    pub(crate) fn slice(&mut self) -> Read<&'a [u8]> {
        let at = self.pos;
        let size = self.long()?;
        let end = usize::try_from(size)
            .ok()
            .and_then(|size| self.pos.checked_add(size))
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| {
                Malformed(format!(
                    "string or bytes of length {size} at byte {at} overrun the record"
                ))
            })?;
        let slice = &self.buf[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    /// A string: `slice`, which must be UTF-8.
    pub(crate) fn text(&mut self) -> Read<&'a str> {
        let at = self.pos;
        std::str::from_utf8(self.slice()?)
            .map_err(|e| Malformed(format!("string at byte {at} is not UTF-8: {e}")))
    }

    /// An array or map block count; a negative count is followed by the block's byte size.
    pub(crate) fn count(&mut self) -> Read<u64> {
        let at = self.pos;
        let count = self.long()?;
        if count < 0 {
            self.long()?;
        }
        count
            .checked_abs()
            .map(|c| c as u64)
            .ok_or_else(|| Malformed(format!("block count at byte {at} is out of range")))
    }

    /// An enum symbol's or union branch's index, below `size`.
    pub(crate) fn index(&mut self, size: usize, what: &str) -> Read<usize> {
        let at = self.pos;
        let index = self.long()?;
        usize::try_from(index)
            .ok()
            .filter(|&i| i < size)
            .ok_or_else(|| Malformed(format!("{what} {index} at byte {at} is out of range")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encode::write_long;

    fn long(bytes: &[u8]) -> Read<i64> {
        Reader::new(bytes, 0).long()
    }

    fn message<T: std::fmt::Debug>(read: Read<T>) -> String {
        read.unwrap_err().0
    }

    fn encoded(value: i64) -> Vec<u8> {
        let mut out = Vec::new();
        write_long(&mut out, value);
        out
    }

    #[test]
    fn small_longs_are_zig_zag_encoded() {
        for (bytes, value) in [
            (&[0x00][..], 0),
            (&[0x01], -1),
            (&[0x02], 1),
            (&[0x7f], -64),
            (&[0x80, 0x01], 64),
            (&[0xac, 0x02], 150),
        ] {
            assert_eq!(long(bytes).unwrap(), value, "{bytes:02x?}");
        }
    }

    #[test]
    fn the_extremes_take_ten_bytes() {
        let max = [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        let min = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(long(&max).unwrap(), i64::MAX);
        assert_eq!(long(&min).unwrap(), i64::MIN);
        assert_eq!(encoded(i64::MAX), max);
        assert_eq!(encoded(i64::MIN), min);
    }

    #[test]
    fn a_tenth_byte_past_the_64th_bit_overflows() {
        for last in [0x02, 0x7f, 0x80, 0xff] {
            let mut bytes = vec![0xff; 9];
            bytes.push(last);
            bytes.push(0x00); // an eleventh byte is never read
            assert_eq!(message(long(&bytes)), "varint at byte 0 overflows 64 bits");
        }
        let mut reader = Reader::new(
            &[
                0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
            ],
            1,
        );
        assert_eq!(message(reader.long()), "varint at byte 1 overflows 64 bits");
    }

    #[test]
    fn padded_varints_are_read_as_their_value() {
        assert_eq!(long(&[0x80, 0x00]).unwrap(), 0);
        assert_eq!(long(&[0x82, 0x80, 0x80, 0x00]).unwrap(), 1);
        // ten bytes whose tenth holds the 64th bit alone
        let mut bytes = vec![0x80; 9];
        bytes.push(0x01);
        assert_eq!(long(&bytes).unwrap(), 1 << 62);
    }

    #[test]
    fn a_varint_cut_short_names_where_the_record_ends() {
        for cut in 0..10 {
            let bytes = &encoded(i64::MIN)[..cut];
            assert_eq!(
                message(long(bytes)),
                format!("record ends at byte {cut} inside a value")
            );
        }
    }

    #[test]
    fn longs_round_trip_through_the_encoder() {
        let mut values = vec![0, 1, -1, i64::MAX, i64::MIN, i64::MAX - 1, i64::MIN + 1];
        values.extend((0..64).flat_map(|bit| {
            let n = 1i64 << bit;
            [n, n.wrapping_sub(1), n.wrapping_neg(), !n]
        }));
        for value in values {
            let bytes = encoded(value);
            assert!(bytes.len() <= 10, "{value}: {} bytes", bytes.len());
            let mut reader = Reader::new(&bytes, 0);
            assert_eq!(reader.long().unwrap(), value);
            assert_eq!(reader.pos, bytes.len());
        }
    }

    #[test]
    fn booleans_are_zero_or_one() {
        assert!(!Reader::new(&[0], 0).boolean().unwrap());
        assert!(Reader::new(&[1], 0).boolean().unwrap());
        assert_eq!(
            message(Reader::new(&[9, 2], 1).boolean()),
            "boolean byte 2 at byte 1"
        );
        assert_eq!(
            message(Reader::new(&[], 0).boolean()),
            "record ends at byte 0 inside a value"
        );
    }

    #[test]
    fn slices_end_within_the_record() {
        let mut reader = Reader::new(&[0x06, b'a', b'b', b'c', 0x00], 0);
        assert_eq!(reader.slice().unwrap(), b"abc");
        assert_eq!(reader.slice().unwrap(), b"");
        assert_eq!(reader.pos, 5);
        assert_eq!(
            message(reader.slice()),
            "record ends at byte 5 inside a value"
        );
    }

    #[test]
    fn a_negative_or_overlong_length_is_refused() {
        for (length, at) in [(-1, 0), (-2, 0), (4, 0), (i64::MAX, 0), (i64::MIN, 0)] {
            let mut bytes = encoded(length);
            bytes.extend_from_slice(b"abc");
            assert_eq!(
                message(Reader::new(&bytes, at).slice()),
                format!("string or bytes of length {length} at byte {at} overrun the record")
            );
        }
        // a length that fits, read past the start of the buffer
        let mut reader = Reader::new(&[0xff, 0x04, b'x', b'y'], 1);
        assert_eq!(reader.slice().unwrap(), b"xy");
        let mut reader = Reader::new(&[0xff, 0x06, b'x', b'y'], 1);
        assert_eq!(
            message(reader.slice()),
            "string or bytes of length 3 at byte 1 overrun the record"
        );
    }

    #[test]
    fn strings_are_utf8() {
        let mut bytes = encoded(3);
        bytes.extend_from_slice("é!".as_bytes());
        assert_eq!(Reader::new(&bytes, 0).text().unwrap(), "é!");
        let bytes = [0x04, 0xc3, 0x28];
        let error = message(Reader::new(&bytes, 0).text());
        assert!(
            error.starts_with("string at byte 0 is not UTF-8: "),
            "{error}"
        );
    }

    #[test]
    fn block_counts_are_read_with_their_size() {
        let mut bytes = encoded(3);
        bytes.extend(encoded(-2));
        bytes.extend(encoded(40)); // the block's byte size, skipped
        bytes.extend(encoded(0));
        let mut reader = Reader::new(&bytes, 0);
        assert_eq!(reader.count().unwrap(), 3);
        assert_eq!(reader.count().unwrap(), 2);
        assert_eq!(reader.count().unwrap(), 0);
        assert_eq!(reader.pos, bytes.len());
    }

    #[test]
    fn the_most_negative_block_count_is_out_of_range() {
        let mut bytes = encoded(i64::MIN);
        bytes.extend(encoded(0));
        assert_eq!(
            message(Reader::new(&bytes, 0).count()),
            "block count at byte 0 is out of range"
        );
        let bytes = encoded(-1); // a negative count without its size
        assert_eq!(
            message(Reader::new(&bytes, 0).count()),
            "record ends at byte 1 inside a value"
        );
        let bytes = encoded(i64::MAX);
        assert_eq!(Reader::new(&bytes, 0).count().unwrap(), i64::MAX as u64);
    }

    #[test]
    fn indexes_are_below_the_size() {
        assert_eq!(
            Reader::new(&encoded(2), 0).index(3, "enum index").unwrap(),
            2
        );
        for index in [3, 4, -1, i64::MIN, i64::MAX] {
            assert_eq!(
                message(Reader::new(&encoded(index), 0).index(3, "enum index")),
                format!("enum index {index} at byte 0 is out of range")
            );
        }
        assert_eq!(
            message(Reader::new(&encoded(0), 0).index(0, "union branch")),
            "union branch 0 at byte 0 is out of range"
        );
    }

    /// A record of each kind of value: long, string, bytes, boolean, an enum index, a
    /// nullable long, and an array of longs in one sized block.
    fn sample() -> Vec<u8> {
        let text = "héllo".as_bytes();
        let mut out = encoded(-300);
        out.extend(encoded(text.len() as i64));
        out.extend_from_slice(text);
        out.extend(encoded(3));
        out.extend_from_slice(&[0, 1, 2]);
        out.push(1);
        out.extend(encoded(2));
        out.extend(encoded(1));
        out.extend(encoded(i64::MIN));
        out.extend(encoded(-2));
        out.extend(encoded(11));
        out.extend(encoded(i64::MAX));
        out.extend(encoded(7));
        out.extend(encoded(0));
        out
    }

    fn read_sample(reader: &mut Reader<'_>) -> Read<()> {
        assert_eq!(reader.long()?, -300);
        assert_eq!(reader.text()?, "héllo");
        assert_eq!(reader.slice()?, &[0, 1, 2]);
        assert!(reader.boolean()?);
        assert_eq!(reader.index(3, "enum index")?, 2);
        assert_eq!(reader.index(2, "union branch")?, 1);
        assert_eq!(reader.long()?, i64::MIN);
        let mut items = Vec::new();
        loop {
            let count = reader.count()?;
            if count == 0 {
                break;
            }
            for _ in 0..count {
                items.push(reader.long()?);
            }
        }
        assert_eq!(items, [i64::MAX, 7]);
        Ok(())
    }

    #[test]
    fn a_record_cut_at_any_byte_is_malformed_where_it_ends() {
        let bytes = sample();
        let mut reader = Reader::new(&bytes, 0);
        read_sample(&mut reader).unwrap();
        assert_eq!(reader.pos, bytes.len());
        for cut in 0..bytes.len() {
            let error = message(read_sample(&mut Reader::new(&bytes[..cut], 0)));
            assert!(
                error == format!("record ends at byte {cut} inside a value")
                    || error.ends_with("overrun the record"),
                "cut at {cut}: {error}"
            );
        }
    }
}
