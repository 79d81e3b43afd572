//! What a server offers: its tools, resources, resource templates and
//! prompts, listed with one pager; prompts rendered and arguments
//! completed; resources read and subscribed to; and the capabilities a
//! request needs, checked before it is sent.

pub(crate) mod capabilities;
pub(crate) mod footprint;
pub(crate) mod pages;
pub(crate) mod prompts;
pub(crate) mod resources;
