//! Who a group member's request says it is: the fields Heartbeat, OffsetCommit and the
//! other requests of a current member carry, borrowed from the request's frame.

/// A request's group, generation, member id and `group.instance.id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member<'a> {
    pub group_id: &'a [u8],
    /// the generation it acts in (OffsetCommit's `generation_id_or_member_epoch`)
    pub generation_id: i32,
    pub member_id: &'a [u8],
    pub group_instance_id: Option<&'a [u8]>,
}
