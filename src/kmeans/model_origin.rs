//! The origin of a K-Means model fitted on f64 data (module [`origin`](crate::origin)):
//! kept beside the model's f32 centroids, moved with the data, checked with the model.

use super::model::Origin;
use super::{KMeans, KMeansInit, KMeansModel};
use crate::error::{Error, Result};
use crate::gpu::GpuInput;
use crate::origin::{translate_rows, Translate};

impl Origin {
    /// The centroids in the data's units, f64.
    pub(super) fn absolute(&self) -> Vec<f64> {
        let mut c: Vec<f64> = self.centroids.iter().map(|&v| v as f64).collect();
        translate_rows(&mut c, &self.point);
        c
    }

    /// Checks the origin against K x D centroids in the data's units.
    pub(super) fn validate(
        &self,
        k: usize,
        d: usize,
        centroids: &[f32],
    ) -> std::result::Result<(), String> {
        if self.point.len() != d || self.centroids.len() != k * d {
            return Err(format!(
                "an origin of {} values and {} relative centroid values for k = {k}, d = {d}",
                self.point.len(),
                self.centroids.len()
            ));
        }
        if !self.point.iter().all(|v| v.is_finite())
            || !self.centroids.iter().all(|v| v.is_finite())
        {
            return Err("non-finite origin".into());
        }
        let agree = self
            .absolute()
            .iter()
            .zip(centroids)
            .all(|(&a, &c)| a as f32 == c);
        if !agree {
            return Err("the centroids are not the origin plus the relative centroids".into());
        }
        Ok(())
    }
}

impl Translate for KMeansModel {
    /// The model of the data moved by `by`: its origin moved (a model without one takes `by`
    /// as its origin and its centroids as the relative ones), the centroids in the data's
    /// units recomputed, the given start moved.
    fn translated(mut self, by: &[f64]) -> Result<Self> {
        crate::origin::check_shift(by, self.n_features)?;
        let mut origin = self.origin.take().unwrap_or_else(|| {
            Box::new(Origin {
                point: vec![0.0; by.len()],
                centroids: self.centroids.clone(),
            })
        });
        translate_rows(&mut origin.point, by);
        let absolute = origin.absolute();
        if let Some(&v) = absolute.iter().find(|v| !(**v as f32).is_finite()) {
            return Err(Error::Float32Range {
                what: "a K-Means centroid (kept in float32)".into(),
                value: v,
            });
        }
        self.centroids = absolute.iter().map(|&v| v as f32).collect();
        self.origin = Some(origin);
        self.params = self.params.translated(by)?;
        Ok(self)
    }
}

impl KMeansModel {
    /// For f64 rows: the origin they are centred on (the model's, else the mean of its
    /// centroids) and the centroids relative to it; `None` for f32 rows.
    pub(super) fn centred(&self, x: &impl GpuInput) -> Result<Option<(Vec<f64>, Vec<f32>)>> {
        if x.f64_rows().is_none() {
            return Ok(None);
        }
        if let Some(o) = &self.origin {
            return Ok(Some((o.point.clone(), o.centroids.clone())));
        }
        let d = self.n_features;
        let centroids: Vec<f64> = self.centroids.iter().map(|&v| v as f64).collect();
        let point = crate::origin::column_means(&centroids, d);
        let relative = centroids
            .chunks_exact(d)
            .flat_map(|c| c.iter().zip(&point).map(|(v, p)| (v - p) as f32))
            .collect();
        Ok(Some((point, relative)))
    }
}

impl Translate for KMeans {
    /// Given centroids moved by `by`; the other starts have no positions.
    fn translated(mut self, by: &[f64]) -> Result<Self> {
        if let KMeansInit::Centroids(c) = &mut self.init {
            translate_rows(c, by);
        }
        Ok(self)
    }
}

impl Translate for crate::kmeans::MiniBatchKMeans {
    /// Given centroids moved by `by`.
    fn translated(mut self, by: &[f64]) -> Result<Self> {
        if let KMeansInit::Centroids(c) = &mut self.init {
            translate_rows(c, by);
        }
        Ok(self)
    }
}
