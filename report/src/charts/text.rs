//! An SVG drawing backend whose text measurements are fixed arithmetic.
//!
//! plotters lays out captions, tick labels and axis descriptions with the backend's
//! `estimate_text_size`. `SVGBackend` does not implement it, so plotters falls back to its
//! font code, which on `wasm32-unknown-unknown` measures a `<span>` in the browser's DOM:
//! it panics outside a browser (Node, wasmtime) and inside one the layout depends on the
//! fonts installed. [`FixedMetrics`] wraps `SVGBackend`, forwards every drawing call to it
//! and answers `estimate_text_size` with 0.6 em per character and 1 em of height, so the
//! same input gives the same SVG bytes everywhere.
//!
//! Legends are drawn by `charts::draw` from the same metrics ([`text_width`]):
//! plotters' `configure_series_labels` measures text through the font code directly.

use plotters::prelude::SVGBackend;
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};

/// Width of one character in em.
pub const CHAR_EM: f64 = 0.6;

/// The em (in pixels) of a plotters font size: the SVG backend writes `size / 1.24` as
/// the `font-size` attribute.
pub fn em(size: f64) -> f64 {
    size / 1.24
}

/// Estimated width in pixels of `text` at plotters font size `size`.
pub fn text_width(text: &str, size: f64) -> u32 {
    (CHAR_EM * em(size) * text.chars().count() as f64).round() as u32
}

/// `SVGBackend` with fixed text metrics.
pub struct FixedMetrics<'a> {
    inner: SVGBackend<'a>,
}

impl<'a> FixedMetrics<'a> {
    /// Draws into `buf`, an SVG of `size` pixels.
    pub fn with_string(buf: &'a mut String, size: (u32, u32)) -> Self {
        FixedMetrics {
            inner: SVGBackend::with_string(buf, size),
        }
    }
}

type Result<E> = std::result::Result<(), DrawingErrorKind<E>>;

impl DrawingBackend for FixedMetrics<'_> {
    type ErrorType = <SVGBackend<'static> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<Self::ErrorType> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<Self::ErrorType> {
        self.inner.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result<Self::ErrorType> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<Self::ErrorType> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<Self::ErrorType> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<Self::ErrorType> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<Self::ErrorType> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<Self::ErrorType> {
        self.inner.fill_polygon(vert, style)
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result<Self::ErrorType> {
        self.inner.draw_text(text, style, pos)
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> std::result::Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        let size = style.size();
        Ok((text_width(text, size), em(size).round() as u32))
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<Self::ErrorType> {
        self.inner.blit_bitmap(pos, size, src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::prelude::*;

    #[test]
    fn text_is_measured_by_characters() {
        assert_eq!(text_width("abcde", 12.4), 30);
        assert_eq!(text_width("张三", 12.4), 12);
        let mut buf = String::new();
        let b = FixedMetrics::with_string(&mut buf, (100, 100));
        let style = TextStyle::from(("sans-serif", 12.4).into_font());
        assert_eq!(b.estimate_text_size("abcde", &style).unwrap(), (30, 10));
    }
}
